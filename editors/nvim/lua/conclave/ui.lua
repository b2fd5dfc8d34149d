---@mod conclave.ui Read-only scratch buffers of the plugin
local M = {}

--- `base`, with the project's folder name appended when several servers run, so that
--- each project's list has a buffer of its own.
---@param base string
---@param client vim.lsp.Client
---@return string
function M.project_name(base, client)
  if #require('conclave.client').clients() > 1 then
    return base .. '/' .. vim.fs.basename(client.root_dir)
  end
  return base
end

--- A read-only scratch buffer named `name` (reused when it exists).
---@param name string
---@param root string|nil the project root the buffer belongs to
---@param filetype string|nil
---@return integer bufnr, boolean created
function M.scratch(name, root, filetype)
  local existing = vim.fn.bufnr('^' .. vim.fn.escape(name, '\\/.*$^~[]') .. '$')
  if existing ~= -1 and vim.api.nvim_buf_is_valid(existing) then
    return existing, false
  end
  local bufnr = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_name(bufnr, name)
  vim.bo[bufnr].buftype = 'nofile'
  vim.bo[bufnr].bufhidden = 'hide'
  vim.bo[bufnr].swapfile = false
  vim.bo[bufnr].modifiable = false
  vim.bo[bufnr].readonly = true
  if filetype then
    vim.bo[bufnr].filetype = filetype
  end
  if root then
    vim.b[bufnr].conclave_root = root
  end
  return bufnr, true
end

--- Replace a plugin buffer's text; it is modifiable only while this runs.
---@param bufnr integer
---@param lines string[]|string
function M.set_lines(bufnr, lines)
  if not vim.api.nvim_buf_is_valid(bufnr) then
    return
  end
  if type(lines) == 'string' then
    lines = M.split(lines)
  end
  vim.bo[bufnr].readonly = false
  vim.bo[bufnr].modifiable = true
  vim.api.nvim_buf_set_lines(bufnr, 0, -1, false, lines)
  vim.bo[bufnr].modifiable = false
  vim.bo[bufnr].readonly = true
  vim.bo[bufnr].modified = false
end

--- Text to lines (a final newline does not make an empty last line).
function M.split(text)
  text = text or ''
  if text:sub(-1) == '\n' then
    text = text:sub(1, -2)
  end
  return vim.split(text, '\n', { plain = true })
end

--- The window the plugin shows its buffers in (lists, logs, reports, whiteboards): one
--- per tab page, reused, so opening another list does not stack up splits.
local plugin_win = {} -- tabpage -> window

--- Show a buffer: focus its window in this tab, else put it in the plugin's window of this
--- tab, else open that window as a split.
---@param bufnr integer
---@param how string|nil an Ex command that opens a window ('botright split' by default)
function M.show(bufnr, how)
  for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
    if vim.api.nvim_win_get_buf(win) == bufnr then
      vim.api.nvim_set_current_win(win)
      return win
    end
  end
  local tab = vim.api.nvim_get_current_tabpage()
  local win = plugin_win[tab]
  if win and vim.api.nvim_win_is_valid(win) and vim.api.nvim_win_get_tabpage(win) == tab then
    vim.api.nvim_win_set_buf(win, bufnr)
    vim.api.nvim_set_current_win(win)
    return win
  end
  vim.cmd(how or 'botright split')
  win = vim.api.nvim_get_current_win()
  vim.api.nvim_win_set_buf(win, bufnr)
  vim.wo[win].wrap = false
  plugin_win[tab] = win
  return win
end

--- A buffer holding text (logs, reports).
function M.show_text(name, root, text, filetype)
  local bufnr = M.scratch(name, root, filetype or 'markdown')
  M.set_lines(bufnr, text)
  M.show(bufnr)
  return bufnr
end

return M
