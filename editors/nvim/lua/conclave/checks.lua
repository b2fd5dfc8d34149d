---@mod conclave.checks A task's final report, checks and cost, with the failing output, in a buffer
---
--- `conclave://checks/<taskId>`: once the task ended, the top agent's final report on it,
--- headed by who wrote it; what the task spent (in all and by agent) and every check that
--- ran on its code, failures first, each with its rule ids and its whole output. Fetched
--- with `conclave/getTask`, and again while the buffer is open whenever the task's summary
--- says its usage or its checks moved, or the finished task changed (its final report
--- follows the end with a `conclave/taskUpdated` of its own).
local client_mod = require('conclave.client')
local ui = require('conclave.ui')
local usage = require('conclave.usage')

local M = {}

--- bufnr -> { client_id, task_id, version, fetching, again }
local buffers = {}

local ICON = { passed = '✔', failed = '✖', skipped = '⊘' }
local ORDER = { failed = 1, skipped = 2, passed = 3 }

--- What in a task summary says its detail may have moved: once the task finished, any change.
local function version(task)
  local u = type(task.usageTotal) == 'table' and task.usageTotal or {}
  local counts = type(task.checkCounts) == 'table' and task.checkCounts or {}
  local finished = require('conclave.tasks').FINISHED[task.status]
  return table.concat({
    tostring(task.status),
    tostring(u.calls or 0),
    tostring(u.inputTokens or 0),
    tostring(u.outputTokens or 0),
    tostring(counts.at or ''),
    finished and tostring(task.updatedAt or '') or '',
  }, '|')
end

local function list(v)
  return type(v) == 'table' and v or {}
end

--- "2026-01-31 14:05 UTC" for an RFC 3339 time in UTC (as the server sends them), else as is.
local function when(at)
  local day, time = tostring(at):match('^(%d+%-%d+%-%d+)T(%d+:%d+)')
  return day and ('%s %s UTC'):format(day, time) or tostring(at)
end

--- The top agent's final report on the finished task, headed by who wrote it (none: {}).
function M.report_lines(detail)
  local report = detail.finalReport
  if type(report) ~= 'table' or type(report.text) ~= 'string' then
    return {}
  end
  local lines = { ('Final report by %s (%s)'):format(tostring(report.by or '?'), when(report.at)) }
  for _, l in ipairs(vim.split(vim.trim(report.text), '\n', { plain = true })) do
    table.insert(lines, l == '' and '' or ('    ' .. l))
  end
  table.insert(lines, '')
  return lines
end

--- The buffer's lines for a TaskDetail.
function M.lines(client_id, detail)
  local agents = require('conclave.agents')
  local lines = {
    ('Checks and cost of "%s"  [%s]  %s'):format(
      detail.title or detail.taskId,
      detail.status or '?',
      require('conclave.tasks').short_id(detail.taskId)
    ),
    '',
  }
  -- The outcome first, as the report itself puts it: what the top concluded.
  vim.list_extend(lines, M.report_lines(detail))
  local spent = type(detail.usage) == 'table' and detail.usage or {}
  local total = type(spent.total) == 'table' and spent.total or nil
  if total and (total.calls or 0) > 0 then
    table.insert(lines, 'Tokens: ' .. usage.detail(total))
    local by_agent = {}
    for agent_id, used in pairs(list(spent.byAgent)) do
      local name = agents.name(client_id, agent_id) or require('conclave.tasks').short_id(agent_id)
      table.insert(by_agent, { name = name, used = used })
    end
    table.sort(by_agent, function(a, b)
      return usage.total_tokens(a.used) > usage.total_tokens(b.used)
    end)
    for _, entry in ipairs(by_agent) do
      table.insert(lines, ('    %-14s %s'):format(entry.name, usage.label(entry.used)))
    end
  else
    table.insert(lines, 'Tokens: none yet (no model call was made for this task)')
  end
  table.insert(lines, '')

  local checks = {}
  for i, c in ipairs(list(detail.checks)) do
    table.insert(checks, { check = c, place = i })
  end
  if #checks == 0 then
    table.insert(lines, 'No check ran on this task (no code was written, or it has not got that far).')
    return lines
  end
  -- Failures first: what a person opens this for.
  table.sort(checks, function(a, b)
    local oa, ob = ORDER[a.check.status] or 9, ORDER[b.check.status] or 9
    if oa ~= ob then
      return oa < ob
    end
    return a.place < b.place
  end)
  local subtasks = {}
  for i, s in ipairs(list(detail.subtasks)) do
    subtasks[s.subtaskId] = ('[%d/%d] %s'):format(i, #list(detail.subtasks), s.description or s.subtaskId)
  end
  for _, entry in ipairs(checks) do
    local c = entry.check
    local rules = #list(c.rules) > 0 and ('  ' .. table.concat(c.rules, ', ')) or ''
    table.insert(
      lines,
      ('%s %s  %s  [%s]%s'):format(ICON[c.status] or '?', c.kind or '?', c.name or '', c.status or '?', rules)
    )
    local on = type(c.subtaskId) == 'string' and subtasks[c.subtaskId] or 'the whole task'
    local files = #list(c.files) > 0 and table.concat(c.files, ', ') or 'the whole project'
    table.insert(lines, ('    checked: %s · files: %s'):format(on, files))
    local text = vim.trim(type(c.detail) == 'string' and c.detail or '')
    if text ~= '' then
      for _, l in ipairs(vim.split(text, '\n', { plain = true })) do
        table.insert(lines, '    │ ' .. l)
      end
    end
    table.insert(lines, '')
  end
  return lines
end

local function fetch(bufnr)
  local state = buffers[bufnr]
  local client = state and client_mod.get_by_id(state.client_id)
  if not state or not client then
    return
  end
  if state.fetching then
    state.again = true
    return
  end
  state.fetching = true
  client_mod.request(client, 'conclave/getTask', { taskId = state.task_id }, function(err, detail)
    state.fetching = false
    if not vim.api.nvim_buf_is_valid(bufnr) or buffers[bufnr] ~= state then
      return
    end
    if err then
      client_mod.report_error('conclave/getTask', err)
    elseif type(detail) == 'table' then
      state.version = version(detail)
      ui.set_lines(bufnr, M.lines(state.client_id, detail))
    end
    if state.again then
      state.again = false
      fetch(bufnr)
    end
  end)
end

--- Open the checks of a task.
function M.open(client, task_id)
  local bufnr, created = ui.scratch('conclave://checks/' .. task_id, client.root_dir, 'conclavechecks')
  buffers[bufnr] = { client_id = client.id, task_id = task_id }
  if created then
    ui.set_lines(bufnr, { 'Fetching the checks of task ' .. task_id .. '…' })
    vim.keymap.set('n', 'R', function()
      fetch(bufnr)
    end, { buffer = bufnr, desc = 'Conclave: refresh the checks', nowait = true })
    vim.api.nvim_create_autocmd('BufWipeout', {
      buffer = bufnr,
      callback = function()
        buffers[bufnr] = nil
      end,
    })
  end
  ui.show(bufnr)
  fetch(bufnr)
  return bufnr
end

--- `conclave/taskUpdated`: an open checks buffer of the task follows it.
function M.on_task_updated(client_id, task)
  for bufnr, state in pairs(buffers) do
    if not vim.api.nvim_buf_is_valid(bufnr) then
      buffers[bufnr] = nil
    elseif state.client_id == client_id and state.task_id == task.taskId and state.version ~= version(task) then
      fetch(bufnr)
    end
  end
end

return M
