---@mod conclave.approvals Approvals through vim.ui.select, without blocking the editor
---
--- The server asks with the request `conclave/requestApproval`. Its handler answers at
--- once with `null` ("dismissed for now": the approval stays pending on the server) and
--- asks the user on the next tick. The user's answer goes back with
--- `conclave/resolveApproval`. Cancelling the selection leaves the approval pending;
--- `:Conclave approvals` lists the pending ones (conclave/listApprovals) and asks again.
local client_mod = require('conclave.client')
local ui = require('conclave.ui')

local M = {}

--- approvalId -> { approval = ApprovalRequest, client_id = integer }
M.pending = {}

local queue = {}
local queued = {} -- approvalId -> true while queued or being asked
local asking = false

local function count_pending()
  local n = 0
  for _ in pairs(M.pending) do
    n = n + 1
  end
  return n
end
M.count = count_pending

-- Previews ---------------------------------------------------------------------------

local function preview_diff(approval)
  local diff = approval.diff
  local fname = vim.uri_to_fname(diff.uri)
  local base = vim.fs.basename(fname)
  local ft = vim.filetype.match({ filename = fname }) or ''
  vim.cmd('tab split')
  local tab = vim.api.nvim_get_current_tabpage()
  local bufs = {}
  for i, side in ipairs({ 'before', 'after' }) do
    local bufnr = ui.scratch(('conclave://approval/%s/%s/%s'):format(approval.approvalId, side, base), nil, ft)
    vim.bo[bufnr].bufhidden = 'wipe'
    ui.set_lines(bufnr, diff[side] or '')
    if i == 2 then
      vim.cmd('rightbelow vsplit')
    end
    vim.api.nvim_win_set_buf(0, bufnr)
    vim.cmd('diffthis')
    bufs[i] = bufnr
  end
  return function()
    if vim.api.nvim_tabpage_is_valid(tab) then
      if #vim.api.nvim_list_tabpages() > 1 then
        vim.cmd('tabclose ' .. vim.api.nvim_tabpage_get_number(tab))
      end
    end
    for _, bufnr in ipairs(bufs) do
      if vim.api.nvim_buf_is_valid(bufnr) then
        vim.api.nvim_buf_delete(bufnr, { force = true })
      end
    end
  end
end

local function preview_float(approval)
  local lines = { ('# %s'):format(approval.title or approval.kind), '' }
  table.insert(lines, ('Severity: %s    Kind: %s'):format(approval.severity or '?', approval.kind or '?'))
  table.insert(lines, '')
  vim.list_extend(lines, ui.split(approval.detail or ''))
  if approval.command and approval.command ~= '' then
    vim.list_extend(lines, { '', 'Command:', '    ' .. approval.command })
  end
  if approval.proposedSolution and approval.proposedSolution ~= '' then
    vim.list_extend(lines, { '', 'Proposed: ' .. approval.proposedSolution })
  end
  local bufnr = vim.api.nvim_create_buf(false, true)
  vim.bo[bufnr].bufhidden = 'wipe'
  vim.api.nvim_buf_set_lines(bufnr, 0, -1, false, lines)
  vim.bo[bufnr].modifiable = false
  vim.bo[bufnr].filetype = 'markdown'
  local width = 20
  for _, l in ipairs(lines) do
    width = math.max(width, vim.fn.strdisplaywidth(l))
  end
  width = math.min(width + 2, math.max(20, vim.o.columns - 6))
  local height = math.min(#lines, math.max(3, vim.o.lines - 8))
  local win = vim.api.nvim_open_win(bufnr, false, {
    relative = 'editor',
    width = width,
    height = height,
    row = math.max(0, math.floor((vim.o.lines - height) / 2) - 4),
    col = math.max(0, math.floor((vim.o.columns - width) / 2)),
    border = 'rounded',
    style = 'minimal',
    title = ' Conclave ' .. (approval.kind or 'approval') .. ' ',
    title_pos = 'center',
  })
  vim.wo[win].wrap = true
  return function()
    if vim.api.nvim_win_is_valid(win) then
      vim.api.nvim_win_close(win, true)
    end
  end
end

--- Show what the approval is about; returns a function that hides it.
function M.preview(approval)
  local ok, close
  if approval.kind == 'fileChange' and type(approval.diff) == 'table' then
    ok, close = pcall(preview_diff, approval)
  else
    ok, close = pcall(preview_float, approval)
  end
  if ok then
    return close
  end
  return function() end
end

-- Asking -----------------------------------------------------------------------------

local process

local function finish()
  asking = false
  vim.schedule(process)
end

--- Send the user's decision.
function M.resolve(client_id, approval, decision, extra, done)
  local client = client_mod.get_by_id(client_id)
  if not client then
    vim.notify('Conclave: the server is gone; the approval stays pending', vim.log.levels.WARN)
    return done and done(false)
  end
  local params = vim.tbl_extend('force', { approvalId = approval.approvalId, decision = decision }, extra or {})
  client_mod.request(client, 'conclave/resolveApproval', params, function(err, result)
    if err then
      if err.code == 1002 then
        M.pending[approval.approvalId] = nil
        vim.notify('Conclave: that approval was already answered', vim.log.levels.INFO)
      else
        client_mod.report_error('conclave/resolveApproval', err)
      end
    else
      M.pending[approval.approvalId] = nil
    end
    require('conclave.status').refresh()
    if done then
      done(not err and result and result.accepted)
    end
  end)
end

--- What "Modify the subtask" starts from: the subtask's current description (the
--- approval's `subtaskDescription`, else the subtask in the task the approval is about), so
--- it is edited rather than retyped; the advice sentence only when the subtask is unknown.
function M.modify_default(approval)
  if type(approval.subtaskDescription) == 'string' and approval.subtaskDescription ~= '' then
    return approval.subtaskDescription
  end
  local entry = require('conclave.tasks').tasks[approval.taskId]
  if entry and type(approval.subtaskId) == 'string' then
    for _, subtask in ipairs(entry.task.subtasks or {}) do
      if subtask.subtaskId == approval.subtaskId and type(subtask.description) == 'string' then
        return subtask.description
      end
    end
  end
  return type(approval.proposedSolution) == 'string' and approval.proposedSolution or ''
end

--- The approval being asked right now, how to take its preview down, and how to give up
--- asking it (`abandon`).
local current

local function ask_now(item)
  local approval, client_id = item.approval, item.client_id
  local close = M.preview(approval)
  local answered = false
  current = {
    approvalId = approval.approvalId,
    client_id = client_id,
    close = close,
    abandon = function()
      answered = true -- a late choice from the picker is ignored
    end,
  }
  -- The stock vim.ui.select blocks in inputlist() before the screen is drawn again: draw
  -- the preview (detail float or diff tab) now, or the choice is made blind.
  vim.cmd('redraw')
  vim.ui.select(approval.options or {}, {
    prompt = ('Conclave %s (%s): %s'):format(
      approval.kind or 'approval',
      approval.severity or '?',
      approval.title or ''
    ),
    kind = 'conclave_approval',
    format_item = function(option)
      return option.title or option.id
    end,
  }, function(choice)
    if answered then
      return
    end
    answered = true
    close()
    current = nil
    queued[approval.approvalId] = nil
    if not choice then
      vim.notify(
        ("Conclave: approval '%s' left pending; :Conclave approvals answers it"):format(
          approval.title or approval.approvalId
        ),
        vim.log.levels.INFO
      )
      return finish()
    end
    if choice.id == 'modify' then
      vim.ui.input({
        prompt = 'Modified task description: ',
        default = M.modify_default(approval),
      }, function(text)
        if not text or text == '' then
          vim.notify('Conclave: no description given; the approval stays pending', vim.log.levels.INFO)
          return finish()
        end
        M.resolve(client_id, approval, 'modify', { modifiedDescription = text }, finish)
      end)
      return
    end
    M.resolve(client_id, approval, choice.id, nil, finish)
  end)
end

process = function()
  if asking then
    return
  end
  while #queue > 0 do
    local item = table.remove(queue, 1)
    if M.pending[item.approval.approvalId] then
      asking = true
      return ask_now(item)
    end
    queued[item.approval.approvalId] = nil
  end
end

--- Queue an approval to be asked (one vim.ui.select at a time).
function M.ask(client_id, approval)
  M.pending[approval.approvalId] = { approval = approval, client_id = client_id }
  if queued[approval.approvalId] then
    return
  end
  queued[approval.approvalId] = true
  table.insert(queue, { approval = approval, client_id = client_id })
  process()
end

--- Stops asking the approval being asked: its preview goes, a late choice from a picker
--- left open is ignored, and the next approval is asked.
local function abandon_current()
  local asked = current
  current = nil
  queued[asked.approvalId] = nil
  asked.close()
  asked.abandon()
  finish()
end

--- `conclave/approvalResolved`: answered (here or in another editor) or withdrawn by the
--- server (which says why with window/showMessage). It is no longer pending: not asked
--- again, and a preview still shown for it is taken down.
function M.on_resolved(_, params)
  if type(params) ~= 'table' or type(params.approvalId) ~= 'string' then
    return
  end
  M.pending[params.approvalId] = nil
  if current and current.approvalId == params.approvalId then
    abandon_current()
  end
  require('conclave.status').refresh()
end

--- A server that stopped cannot take answers (the next one asks its pending approvals
--- again): its approvals are dropped, and one being asked stops being asked.
function M.forget_client(client_id)
  for id, entry in pairs(M.pending) do
    if entry.client_id == client_id then
      M.pending[id] = nil
    end
  end
  if current and current.client_id == client_id then
    abandon_current()
  end
end

--- Handler of the request `conclave/requestApproval`: returns null at once.
function M.on_request(client_id, approval)
  if type(approval) == 'table' and approval.approvalId then
    M.pending[approval.approvalId] = { approval = approval, client_id = client_id }
    vim.schedule(function()
      M.ask(client_id, approval)
    end)
  end
  return vim.NIL
end

--- `:Conclave approvals`: list what is pending on the server and ask again.
function M.list(client, done)
  client_mod.request(client, 'conclave/listApprovals', {}, function(err, result)
    if err then
      client_mod.report_error('conclave/listApprovals', err)
      return done and done(err)
    end
    local approvals = result.approvals or {}
    for id, entry in pairs(M.pending) do
      if entry.client_id == client.id then
        M.pending[id] = nil
      end
    end
    for _, a in ipairs(approvals) do
      M.pending[a.approvalId] = { approval = a, client_id = client.id }
    end
    if #approvals == 0 then
      vim.notify('Conclave: no pending approvals', vim.log.levels.INFO)
      return done and done(nil, approvals)
    end
    vim.ui.select(approvals, {
      prompt = 'Conclave: pending approvals',
      kind = 'conclave_approvals',
      format_item = function(a)
        return ('[%s/%s] %s'):format(a.kind or '?', a.severity or '?', a.title or a.approvalId)
      end,
    }, function(choice)
      if choice then
        M.ask(client.id, choice)
      end
    end)
    if done then
      done(nil, approvals)
    end
  end)
end

return M
