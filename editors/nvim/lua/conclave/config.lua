---@mod conclave.config Options of the Conclave plugin
local M = {}

--- Keys that belong to the plugin itself. Every other key of the options is a server
--- option and is sent as `initializationOptions` (llm, team, heartbeatMs, recovery,
--- writes, approvals, governance, editor, ...).
M.plugin_keys = {
  cmd = true,
  root_markers = true,
  autostart = true,
  virtual_text = true,
  notify_level = true,
  log_level = true,
}

M.defaults = {
  --- The server command. `$CONCLAVE_BIN` wins over `conclave` on $PATH.
  cmd = nil,
  --- Markers of a project root (searched upwards from the buffer's file).
  root_markers = { 'conclave.toml', '.git' },
  --- Attach to file buffers as they are opened: `'conclave.toml'` starts a server only
  --- for roots that have a conclave.toml (and attaches to one already running), `true`
  --- for every root found by `root_markers`, `false` never (use :Conclave).
  autostart = 'conclave.toml',
  --- Virtual text on buffers of files that are being generated.
  virtual_text = true,
  --- Level of the plugin's own notifications (task finished, approval dismissed, ...).
  notify_level = vim.log.levels.INFO,
}

---@type table
M.options = vim.deepcopy(M.defaults)

--- Merge `opts` (then `vim.g.conclave`) over the defaults.
---@param opts table|nil
function M.set(opts)
  local merged = vim.tbl_deep_extend('force', vim.deepcopy(M.defaults), vim.g.conclave or {}, opts or {})
  if type(merged.root_markers) ~= 'table' or #merged.root_markers == 0 then
    merged.root_markers = vim.deepcopy(M.defaults.root_markers)
  end
  M.options = merged
  return merged
end

--- The server command as a list.
---@return string[]
function M.cmd()
  local cmd = M.options.cmd
  if type(cmd) == 'string' then
    return { cmd, 'serve', '--stdio' }
  end
  if type(cmd) == 'table' and #cmd > 0 then
    return vim.deepcopy(cmd)
  end
  local bin = vim.env.CONCLAVE_BIN
  if not bin or bin == '' then
    bin = 'conclave'
  end
  return { bin, 'serve', '--stdio' }
end

--- The server binary (first word of the command).
---@return string
function M.binary()
  return M.cmd()[1]
end

--- The options sent to the server as `initializationOptions`.
---@return table
function M.server_options()
  local out = {}
  for key, value in pairs(M.options) do
    if not M.plugin_keys[key] then
      out[key] = vim.deepcopy(value)
    end
  end
  if next(out) == nil then
    -- an empty Lua table would be sent as a JSON array
    return vim.empty_dict()
  end
  return out
end

return M
