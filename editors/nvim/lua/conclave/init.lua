---@mod conclave Conclave for Neovim: a team of agents behind `conclave serve --stdio`
local M = {}

local configured = false
local group

local function attachable(bufnr)
  return vim.api.nvim_buf_is_valid(bufnr)
    and vim.bo[bufnr].buftype == ''
    and vim.api.nvim_buf_get_name(bufnr) ~= ''
    and not vim.api.nvim_buf_get_name(bufnr):match('^%a[%w+.-]*://')
end

--- Attach the Conclave client of the buffer's project root to the buffer.
---@param bufnr integer|nil
function M.attach(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  if not attachable(bufnr) then
    return nil
  end
  local client_mod = require('conclave.client')
  local root = client_mod.root_of(vim.api.nvim_buf_get_name(bufnr))
  if not root then
    return nil
  end
  local autostart = require('conclave.config').options.autostart
  if
    autostart == 'conclave.toml'
    and not client_mod.get(root)
    and vim.uv.fs_stat(vim.fs.joinpath(root, 'conclave.toml')) == nil
  then
    return nil -- only a root with conclave.toml (or an already running server) is attached
  end
  return client_mod.start(root, bufnr)
end

--- Set the plugin up. `opts` (merged over `vim.g.conclave` and the defaults):
--- plugin keys (cmd, root_markers, autostart, virtual_text, notify_level) and server
--- options (llm, team, approvals, writes, recovery, heartbeatMs, governance, editor),
--- which are sent as `initializationOptions`.
---@param opts table|nil
function M.setup(opts)
  local config = require('conclave.config')
  config.set(opts)
  configured = true
  group = vim.api.nvim_create_augroup('conclave', { clear = true })
  if config.options.autostart then
    vim.api.nvim_create_autocmd({ 'BufReadPost', 'BufNewFile' }, {
      group = group,
      callback = function(ev)
        M.attach(ev.buf)
      end,
    })
    for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
      if vim.api.nvim_buf_is_loaded(bufnr) then
        M.attach(bufnr)
      end
    end
  end
  vim.api.nvim_create_autocmd({ 'BufReadPost', 'BufWinEnter' }, {
    group = group,
    callback = function()
      require('conclave.status').refresh_marks()
    end,
  })
end

--- Called by the user command when setup() was never called (vim.g.conclave applies).
function M.ensure_setup()
  if not configured then
    M.setup()
  end
end

--- The statusline component: `idle`, `N running`, `↻ retry 2/3`, `⚠ escalated`,
--- `✖ failed`, with what the running tasks spent (`1 running · 12.3k tokens · $0.0042`).
---@return string
function M.status()
  return require('conclave.status').current
end

--- Start (or return) the client of the current project root.
function M.start()
  M.ensure_setup()
  return require('conclave.client').ensure(0)
end

--- Stop every Conclave client.
---@param force boolean|nil
function M.stop(force)
  local client_mod = require('conclave.client')
  for _, client in ipairs(client_mod.clients()) do
    client_mod.stop(client, force)
  end
end

return M
