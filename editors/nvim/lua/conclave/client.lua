---@mod conclave.client Starting `conclave serve --stdio` and talking to it
local config = require('conclave.config')

local M = {}

M.name = 'conclave'

local has_011 = vim.fn.has('nvim-0.11') == 1

--- client id -> true once `initialize` answered
local ready = {}
--- client id -> callbacks waiting for `initialize`
local waiting = {}
--- root -> the error `initialize` failed with (until the server has exited)
local refused = {}

--- One message for an `initialize` the server refused: a folder already served (1007)
--- names the holder; anything else (a typo in conclave.toml) is the server's own words.
---@param err table
---@return string
function M.describe_refusal(err)
  local message = type(err) == 'table' and tostring(err.message or '') or tostring(err)
  if type(err) == 'table' and err.code == 1007 then
    local holder = vim.tbl_get(type(err.data) == 'table' and err.data or {}, 'holder') or {}
    local pid = tonumber(holder.pid) or tonumber(message:match('pid (%d+)'))
    local editor = vim.tbl_get(holder, 'client', 'name')
      or message:match(', for ([^()]-) %(editor pid')
      or message:match(', for ([^()]-)%)')
    local who = {}
    if pid then
      table.insert(who, 'pid ' .. pid)
    end
    if type(editor) == 'string' and editor ~= '' then
      table.insert(who, 'for ' .. editor)
    end
    return (
      'Conclave: another Conclave server%s already serves this folder (another Neovim or an editor window). '
      .. 'Close it there, then run the command again.'
    ):format(#who > 0 and (' (' .. table.concat(who, ', ') .. ')') or '')
  end
  return 'Conclave: the server did not start: ' .. message
end

--- The live server holding `root`, from `.conclave/serve.lock` (one line of JSON, or a
--- bare pid from older servers), or nil.
---@param root string
---@return table|nil holder `{ pid, client? = { name, version? } }`
function M.lock_holder(root)
  local fd = io.open(vim.fs.joinpath(root, '.conclave', 'serve.lock'), 'r')
  if not fd then
    return nil
  end
  local text = vim.trim(fd:read('*a') or '')
  fd:close()
  local ok, holder = pcall(vim.json.decode, text)
  if not ok or type(holder) ~= 'table' then
    holder = { pid = tonumber(text) }
  end
  local pid = tonumber(holder.pid)
  if not pid or vim.uv.kill(pid, 0) ~= 0 then
    return nil -- no holder, or it is gone
  end
  holder.pid = pid
  return holder
end

--- The refusal a server that exited before answering `initialize` met: a folder another
--- live server holds (its answer may be lost with the pipe when it exits at once).
local function busy_refusal(root)
  local holder = M.lock_holder(root)
  if not holder then
    return nil
  end
  local editor = type(holder.client) == 'table' and holder.client.name
  return {
    code = 1007,
    message = ('another `conclave serve` (pid %d%s) is already serving %s'):format(
      holder.pid,
      editor and (', for ' .. editor) or '',
      root
    ),
  }
end

--- `cmd` for vim.lsp.start: the server over stdio, with `initialize` errors taken out of
--- Neovim's hands. Neovim asserts on them, printing a stack trace from inside its client
--- on every command; here the error is kept, the server told to exit, and `on_exit` says
--- it once in plain words.
local function server_cmd(root)
  local cmd = config.cmd()
  return function(dispatchers)
    local answered = false
    -- A refused start is reported by on_exit below, once: Neovim's own "quit with exit
    -- code 1" warning would be a second message about the same thing.
    local wrapped = setmetatable({
      on_exit = function(code, signal)
        if not answered and code ~= 0 and not refused[root] then
          refused[root] = busy_refusal(root)
        end
        return dispatchers.on_exit(refused[root] and 0 or code, signal)
      end,
    }, { __index = dispatchers })
    local rpc = vim.lsp.rpc.start(cmd, wrapped, { cwd = root })
    local request = rpc.request
    rpc.request = function(method, params, callback, notify_reply_callback)
      if method ~= 'initialize' then
        return request(method, params, callback, notify_reply_callback)
      end
      return request(method, params, function(err, result)
        answered = true
        if err then
          refused[root] = err
          rpc.notify('exit')
          vim.defer_fn(function()
            if not rpc.is_closing() then
              rpc.terminate()
            end
          end, 2000)
          return
        end
        return callback(err, result)
      end, notify_reply_callback)
    end
    return rpc
  end
end

--- Capabilities: Neovim's own plus what Conclave can show.
function M.capabilities()
  local caps = vim.lsp.protocol.make_client_capabilities()
  caps.experimental = caps.experimental or {}
  caps.experimental.conclave = { approvals = true, whiteboards = true, recoveryStatus = true }
  -- vim.lsp.util.apply_workspace_edit applies documentChanges (CreateFile + versionless
  -- TextDocumentEdit), but Neovim does not announce it; Conclave writes through it.
  caps.workspace = caps.workspace or {}
  caps.workspace.applyEdit = true
  caps.workspace.workspaceEdit = caps.workspace.workspaceEdit or {}
  caps.workspace.workspaceEdit.documentChanges = true
  local ops = caps.workspace.workspaceEdit.resourceOperations or {}
  if not vim.tbl_contains(ops, 'create') then
    table.insert(ops, 'create')
  end
  caps.workspace.workspaceEdit.resourceOperations = ops
  return caps
end

--- The project root of a path (file or directory), or nil.
---@param path string
---@return string|nil
function M.root_of(path)
  if not path or path == '' then
    return nil
  end
  return vim.fs.root(path, config.options.root_markers)
end

--- The root the current buffer belongs to: the plugin's own buffers remember it, file
--- buffers use their path, anything else the current directory.
---@param bufnr integer|nil
---@return string
function M.current_root(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  local remembered = vim.b[bufnr].conclave_root
  if type(remembered) == 'string' and remembered ~= '' then
    return remembered
  end
  if vim.bo[bufnr].buftype == '' then
    local name = vim.api.nvim_buf_get_name(bufnr)
    local root = M.root_of(name)
    if root then
      return root
    end
  end
  local cwd = vim.fn.getcwd()
  return M.root_of(cwd) or cwd
end

local function alive(client)
  if not client then
    return false
  end
  if has_011 then
    return not client:is_stopped()
  end
  return not client.is_stopped()
end

--- Every running Conclave client.
function M.clients()
  local out = {}
  for _, client in ipairs(vim.lsp.get_clients({ name = M.name })) do
    if alive(client) then
      table.insert(out, client)
    end
  end
  return out
end

--- The running client of a root, if any.
---@param root string
function M.get(root)
  for _, client in ipairs(M.clients()) do
    if client.root_dir == root then
      return client
    end
  end
end

function M.get_by_id(id)
  local client = id and vim.lsp.get_client_by_id(id)
  if alive(client) then
    return client
  end
end

function M.is_ready(client)
  return client ~= nil and ready[client.id] == true
end

--- Run `fn(client)` once the client has been initialized.
function M.when_ready(client, fn)
  if ready[client.id] then
    fn(client)
  else
    waiting[client.id] = waiting[client.id] or {}
    table.insert(waiting[client.id], fn)
  end
end

--- The client configuration for a root (used by vim.lsp.start).
---@param root string
function M.lsp_config(root)
  local handlers = require('conclave.handlers').all()
  return {
    name = M.name,
    cmd = server_cmd(root),
    cmd_cwd = root,
    root_dir = root,
    workspace_folders = { { uri = vim.uri_from_fname(root), name = root } },
    init_options = config.server_options(),
    capabilities = M.capabilities(),
    handlers = handlers,
    on_init = function(client, result)
      ready[client.id] = true
      local proto = vim.tbl_get(result or {}, 'capabilities', 'experimental', 'conclave', 'protocolVersion')
      if proto ~= 1 then
        vim.notify(
          ('Conclave: the server speaks protocol version %s, this plugin speaks 1'):format(vim.inspect(proto)),
          vim.log.levels.WARN
        )
      end
      local queued = waiting[client.id] or {}
      waiting[client.id] = nil
      for _, fn in ipairs(queued) do
        fn(client)
      end
    end,
    on_exit = function(code, signal, client_id)
      ready[client_id] = nil
      local dropped = waiting[client_id]
      waiting[client_id] = nil
      local refusal = refused[root]
      refused[root] = nil
      vim.schedule(function()
        require('conclave.tasks').forget_client(client_id)
        require('conclave.approvals').forget_client(client_id)
        if refusal then
          vim.notify(M.describe_refusal(refusal), vim.log.levels.ERROR)
        elseif code ~= 0 and signal ~= 15 then
          vim.notify(
            ('Conclave: the server exited with code %d%s; see :checkhealth conclave'):format(
              code,
              dropped and #dropped > 0 and ' before it was ready' or ''
            ),
            vim.log.levels.WARN
          )
        end
      end)
    end,
  }
end

local told_missing = false

--- Start (or reuse) the client of a root. With `bufnr`, attach it to that buffer.
---@param root string
---@param bufnr integer|nil
---@return table|nil client
function M.start(root, bufnr)
  local existing = M.get(root)
  if existing and not bufnr then
    return existing
  end
  local bin = config.binary()
  if vim.fn.executable(bin) ~= 1 then
    -- Several starts in one go (autostart, then the command) say it once.
    if not told_missing then
      told_missing = true
      vim.schedule(function()
        told_missing = false
      end)
      local hint = 'set `cmd` in setup() or $CONCLAVE_BIN; see :checkhealth conclave'
      vim.notify(("Conclave: the server binary '%s' was not found (%s)"):format(bin, hint), vim.log.levels.ERROR)
    end
    return nil
  end
  local cfg = M.lsp_config(root)
  local id
  if bufnr then
    id = vim.lsp.start(cfg, { bufnr = bufnr })
  elseif has_011 then
    id = vim.lsp.start(cfg, { attach = false })
  else
    id = vim.lsp.start_client(cfg)
  end
  return id and vim.lsp.get_client_by_id(id) or nil
end

--- The client of the current root, started if needed.
function M.ensure(bufnr)
  return M.start(M.current_root(bufnr))
end

--- Send a request; `cb(err, result)` is called on the main loop.
---@param client table
---@param method string
---@param params table|nil
---@param cb fun(err: table|nil, result: any)|nil
function M.request(client, method, params, cb)
  cb = cb or function(err)
    if err then
      M.report_error(method, err)
    end
  end
  M.when_ready(client, function(c)
    local handler = function(err, result)
      cb(err, result)
    end
    local ok
    if has_011 then
      ok = c:request(method, params or vim.empty_dict(), handler)
    else
      ok = c.request(method, params or vim.empty_dict(), handler)
    end
    if not ok then
      cb({ code = -32603, message = 'the Conclave server is not running' }, nil)
    end
  end)
end

function M.notify(client, method, params)
  if has_011 then
    return client:notify(method, params)
  end
  return client.notify(method, params)
end

--- Stop a client (graceful shutdown then exit).
function M.stop(client, force)
  if has_011 then
    client:stop(force)
  else
    client.stop(force)
  end
end

--- Show an error answer of the server.
function M.report_error(what, err)
  local msg = type(err) == 'table' and (err.message or vim.inspect(err)) or tostring(err)
  vim.notify(('Conclave: %s failed: %s'):format(what, msg), vim.log.levels.ERROR)
end

return M
