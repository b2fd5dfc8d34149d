---@mod conclave.handlers Handlers for what the server sends
local M = {}

--- Run notification handlers on the main loop.
local function main_loop(fn)
  return function(err, params, ctx)
    if vim.in_fast_event() then
      vim.schedule(function()
        fn(err, params, ctx)
      end)
    else
      fn(err, params, ctx)
    end
  end
end

--- URIs a WorkspaceEdit touches.
local function edited_uris(edit)
  local uris, seen = {}, {}
  local function add(uri)
    if uri and not seen[uri] then
      seen[uri] = true
      table.insert(uris, uri)
    end
  end
  for _, change in ipairs(edit.documentChanges or {}) do
    if change.textDocument then
      add(change.textDocument.uri)
    elseif change.kind == 'create' then
      add(change.uri)
    elseif change.kind == 'rename' then
      add(change.newUri)
    end
  end
  for uri in pairs(edit.changes or {}) do
    add(uri)
  end
  return uris
end

--- Whole-document contents a WorkspaceEdit sets (Conclave sends one full-range edit).
local function full_texts(edit)
  local out = {}
  for _, change in ipairs(edit.documentChanges or {}) do
    if change.textDocument and type(change.edits) == 'table' and #change.edits == 1 then
      out[change.textDocument.uri] = change.edits[1].newText
    end
  end
  return out
end

--- Make the buffer's lines + 'eol' hold exactly `text`: Neovim keeps the final newline
--- of a full-content edit as an empty last line, which :write would turn into "\n\n".
local function settle_eol(bufnr, text)
  local lines = vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)
  if table.concat(lines, '\n') ~= text then
    return
  end
  if text:sub(-1) == '\n' then
    if #lines > 1 and lines[#lines] == '' then
      vim.api.nvim_buf_set_lines(bufnr, -2, -1, false, {})
    end
    vim.bo[bufnr].eol = true
  elseif text ~= '' then
    vim.bo[bufnr].eol = false
    vim.bo[bufnr].fixeol = false
  end
end

--- `workspace/applyEdit`: Neovim's handler applies the edit; then every buffer the edit
--- touched that had no unsaved changes before is written, so buffer and disk agree
--- before the server hears `applied = true`.
function M.apply_edit(err, params, ctx, cfg)
  local edit = params and params.edit or {}
  local was_modified = {}
  local uris = edited_uris(edit)
  for _, uri in ipairs(uris) do
    local bufnr = vim.uri_to_bufnr(uri)
    was_modified[uri] = vim.api.nvim_buf_is_loaded(bufnr) and vim.bo[bufnr].modified
  end
  local default = vim.lsp.handlers['workspace/applyEdit']
  local result = default(err, params, ctx, cfg)
  if type(result) ~= 'table' or not result.applied then
    return result or { applied = false, failureReason = 'the edit could not be applied' }
  end
  local texts = full_texts(edit)
  for uri, text in pairs(texts) do
    local bufnr = vim.uri_to_bufnr(uri)
    if vim.api.nvim_buf_is_loaded(bufnr) then
      settle_eol(bufnr, text)
    end
  end
  for _, uri in ipairs(uris) do
    if not was_modified[uri] then
      local bufnr = vim.uri_to_bufnr(uri)
      if vim.api.nvim_buf_is_loaded(bufnr) and vim.bo[bufnr].modified and vim.bo[bufnr].buftype == '' then
        local fname = vim.uri_to_fname(uri)
        vim.fn.mkdir(vim.fs.dirname(fname), 'p')
        local ok, werr = pcall(vim.api.nvim_buf_call, bufnr, function()
          vim.cmd('silent keepalt write!')
        end)
        if not ok then
          return { applied = false, failureReason = ('could not write %s: %s'):format(fname, werr) }
        end
      end
    end
  end
  require('conclave.status').refresh_marks()
  return { applied = true }
end

--- The handlers table given to vim.lsp.start.
function M.all()
  local tasks = require('conclave.tasks')
  local agents = require('conclave.agents')
  local whiteboard = require('conclave.whiteboard')
  local approvals = require('conclave.approvals')
  return {
    ['conclave/taskUpdated'] = main_loop(function(_, params, ctx)
      if params and params.task then
        tasks.on_task_updated(ctx.client_id, params.task)
      end
    end),
    ['conclave/recoveryStatus'] = main_loop(function(_, params, ctx)
      if params then
        tasks.on_recovery(ctx.client_id, params)
      end
    end),
    ['conclave/agentStatus'] = main_loop(function(_, params, ctx)
      if params then
        agents.on_status(ctx.client_id, params)
      end
    end),
    ['conclave/whiteboardChanged'] = main_loop(function(_, params, ctx)
      if params then
        whiteboard.on_changed(ctx.client_id, params)
      end
    end),
    ['conclave/approvalResolved'] = main_loop(function(_, params, ctx)
      approvals.on_resolved(ctx.client_id, params)
    end),
    -- Must answer at once: null means "dismissed for now", the approval stays pending
    -- and is asked through vim.ui.select on the next tick.
    ['conclave/requestApproval'] = function(_, params, ctx)
      return approvals.on_request(ctx.client_id, params)
    end,
    ['workspace/applyEdit'] = M.apply_edit,
  }
end

return M
