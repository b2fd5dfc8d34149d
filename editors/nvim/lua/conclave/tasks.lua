---@mod conclave.tasks Tasks as the server reports them, and the tasks buffer
local client_mod = require('conclave.client')
local ui = require('conclave.ui')

local M = {}

--- taskId -> { task = TaskSummary, client_id = integer, seq = integer }
M.tasks = {}
local seq = 0

M.ACTIVE = {
  queued = true,
  planning = true,
  awaiting_approval = true,
  running = true,
  recovering = true,
  escalated = true,
}

M.FINISHED = { completed = true, failed = true, cancelled = true }

local ICON = {
  queued = '…',
  planning = '✎',
  awaiting_approval = '?',
  running = '▶',
  recovering = '↻',
  escalated = '⚠',
  completed = '✔',
  failed = '✖',
  cancelled = '⊘',
  pending = '·',
}

local function changed()
  require('conclave.status').refresh()
  M.render_all()
end

--- Why a finished task ended, in a line: the first line of its result (the mid's
--- summary), else its last error. Fetched once with conclave/getTask, since a task
--- summary does not carry it; the tasks buffer shows it under the task.
local function learn_why_it_ended(client_id, task_id)
  local entry = M.tasks[task_id]
  local client = vim.lsp.get_client_by_id(client_id)
  if not entry or entry.ended ~= nil or not client then
    return
  end
  entry.ended = false -- asked; not asked again
  client_mod.request(client, 'conclave/getTask', { taskId = task_id }, function(err, detail)
    local now = M.tasks[task_id]
    if err or not now or type(detail) ~= 'table' then
      return
    end
    local why = type(detail.result) == 'string' and detail.result or ''
    why = vim.trim(vim.split(vim.trim(why), '\n', { plain = true })[1] or '')
    local errors = type(detail.errors) == 'table' and detail.errors or {}
    if why == '' and #errors > 0 and type(errors[#errors].message) == 'string' then
      why = errors[#errors].message
    end
    if why ~= '' then
      now.ended = why
      changed()
    end
  end)
end

--- `text` shortened to at most `room` cells (never under 16), ending in … when cut.
function M.shorten(text, room)
  room = math.max(16, room)
  if vim.fn.strdisplaywidth(text) <= room then
    return text
  end
  local cut = vim.fn.strcharpart(text, 0, room - 1)
  while vim.fn.strdisplaywidth(cut) > room - 1 do
    cut = vim.fn.strcharpart(cut, 0, vim.fn.strchars(cut) - 1)
  end
  return cut .. '…'
end

--- `title` shortened so that a message of it and `rest` fits the command line: a longer
--- one stops Neovim at a hit-enter prompt.
--- What a completed task's evidence asks of the person (`checkedBy`): a review when only
--- the team's own test ran its code, or when that test and the code disagreed, else nil.
function M.review_note(task)
  if task.status ~= 'completed' then
    return nil
  end
  if task.checkedBy == 'ownTestOnly' then
    return 'review: only a test the team wrote itself ran the code'
  end
  if task.checkedBy == 'disputed' then
    return "review: the team's test and its code disagreed; other evidence sided with the code"
  end
  return nil
end

function M.fit_title(title, rest)
  return M.shorten(title, vim.v.echospace - vim.fn.strdisplaywidth(rest))
end

--- `conclave/taskUpdated`
function M.on_task_updated(client_id, task)
  local entry = M.tasks[task.taskId]
  local before = entry and entry.task.status
  seq = seq + 1
  M.tasks[task.taskId] = { task = task, client_id = client_id, seq = seq, ended = entry and entry.ended }
  if M.FINISHED[task.status] then
    learn_why_it_ended(client_id, task.taskId)
  end
  if before ~= task.status and M.FINISHED[task.status] and before ~= nil then
    local level = task.status == 'completed' and vim.log.levels.INFO or vim.log.levels.WARN
    local opts = require('conclave.config').options
    if level >= (opts.notify_level or vim.log.levels.INFO) then
      -- Work nobody could run is said to be unchecked, never just "completed", and work
      -- only the team's own test ran is to be reviewed.
      local unchecked = type(task.unchecked) == 'string' and (' — ' .. task.unchecked) or ''
      local review = M.review_note(task)
      if unchecked == '' and review then
        unchecked = ' — ' .. review
      end
      if unchecked ~= '' then
        level = vim.log.levels.WARN
      end
      local rest = ("Conclave: task '' %s%s"):format(task.status, unchecked)
      vim.notify(
        ("Conclave: task '%s' %s%s"):format(M.fit_title(task.title or task.taskId, rest), task.status, unchecked),
        level
      )
    end
  end
  require('conclave.checks').on_task_updated(client_id, task)
  changed()
end

--- The latest provider-wide recovery step other than the circuit's (e.g. "waiting for
--- openai, next try in 20 s"): `{ message, expires }` (uv.now() ms) or nil.
M.provider_notice = nil

--- `conclave/recoveryStatus`
function M.on_recovery(_client_id, event)
  if event.taskId and event.taskId ~= '' and M.tasks[event.taskId] then
    M.tasks[event.taskId].task.recovery = event
    changed()
  elseif event.action == 'circuit_open' or event.action == 'circuit_closed' then
    if event.action == 'circuit_closed' then
      M.provider_notice = nil
      require('conclave.status').refresh()
    end
    vim.notify('Conclave: ' .. (event.message or event.action), vim.log.levels.WARN)
  elseif not event.taskId or event.taskId == '' then
    -- Shown as it arrives, whatever it says, until its delay has run out.
    local delay = tonumber(event.delayMs) or 0
    local notice = { message = event.message or event.action, expires = delay > 0 and (vim.uv.now() + delay) or nil }
    M.provider_notice = notice
    require('conclave.status').refresh()
    if delay > 0 then
      vim.defer_fn(function()
        if M.provider_notice == notice then
          M.provider_notice = nil
          require('conclave.status').refresh()
        end
      end, delay)
    end
  end
end

--- Drop what a stopped client reported.
function M.forget_client(client_id)
  for id, entry in pairs(M.tasks) do
    if entry.client_id == client_id then
      M.tasks[id] = nil
    end
  end
  changed()
end

--- Tasks sorted newest first; `filter(task)` keeps some.
function M.list(filter, client_id)
  local out = {}
  for _, entry in pairs(M.tasks) do
    if (not client_id or entry.client_id == client_id) and (not filter or filter(entry.task)) then
      table.insert(out, entry)
    end
  end
  table.sort(out, function(a, b)
    local ca, cb = a.task.createdAt or '', b.task.createdAt or ''
    if ca ~= cb then
      return ca > cb
    end
    return a.seq > b.seq
  end)
  return out
end

-- The tasks buffer ------------------------------------------------------------------

local buffers = {} -- bufnr -> client_id
--- bufnr -> line number -> taskId. Kept in Lua: a sparse table in a b: variable becomes a
--- list with vim.NIL holes (the header line), which read as a task id.
local line_tasks = {}

--- The first 8 characters of an id: enough to tell tasks apart, short enough not to wrap.
function M.short_id(id)
  return type(id) == 'string' and id:sub(1, 8) or '?'
end

--- "40%" while a task runs, "100%" once completed, nothing for a failed or cancelled one
--- (its progress stops short: "99%" would read as nearly done).
function M.progress_label(task)
  if task.status == 'failed' or task.status == 'cancelled' then
    return nil
  end
  if task.status == 'completed' then
    return '100%'
  end
  return ('%d%%'):format(math.max(0, math.min(99, math.floor(tonumber(task.progress) or 0))))
end

--- "checks ✖ 1 failed [python.stub] · 2 passed": failures first, with their rule ids.
function M.checks_label(counts)
  local parts = {}
  if (counts.failed or 0) > 0 then
    local rules = type(counts.failedRules) == 'table'
        and #counts.failedRules > 0
        and (' [' .. table.concat(counts.failedRules, ', ') .. ']')
      or ''
    table.insert(parts, ('%d failed%s'):format(counts.failed, rules))
  end
  if (counts.passed or 0) > 0 then
    table.insert(parts, ('%d passed'):format(counts.passed))
  end
  if (counts.skipped or 0) > 0 then
    table.insert(parts, ('%d skipped'):format(counts.skipped))
  end
  local mark = (counts.failed or 0) > 0 and '✖' or ((counts.passed or 0) > 0 and '✔' or '⊘')
  return ('checks %s %s'):format(mark, #parts > 0 and table.concat(parts, ' · ') or 'none')
end

local function task_lines(client_id, width)
  local lines, map = {}, {}
  local entries = M.list(nil, client_id)
  if #entries == 0 then
    return { 'No Conclave tasks yet. :Conclave submit {text} starts one.' }, map
  end
  table.insert(lines, '<CR> log  C report, checks, cost  c cancel  r retry  u undo  e error report  R refresh')
  for _, entry in ipairs(entries) do
    local t = entry.task
    local progress = M.progress_label(t)
    local spent = type(t.usageTotal) == 'table' and ('  ' .. require('conclave.usage').label(t.usageTotal)) or ''
    local rest = ('  [%s%s]  %s%s'):format(t.status, progress and (' ' .. progress) or '', M.short_id(t.taskId), spent)
    -- The title gives way, so that the state and what the task spent stay in view.
    local title = M.shorten(t.title or t.taskId, width - 2 - vim.fn.strdisplaywidth(rest))
    table.insert(lines, ('%s %s%s'):format(ICON[t.status] or '?', title, rest))
    map[#lines] = t.taskId
    if type(entry.ended) == 'string' and M.FINISHED[t.status] then
      table.insert(lines, '    = ' .. entry.ended)
      map[#lines] = t.taskId
    end
    if t.revertedBy == 'undo' then
      table.insert(lines, '    ↶ undone: its files were put back as before it')
      map[#lines] = t.taskId
    elseif t.revertedBy == 'failure' then
      table.insert(lines, '    ↶ its files were put back as before it when it failed')
      map[#lines] = t.taskId
    end
    local unchecked = t.unchecked
    if type(unchecked) ~= 'string' or unchecked == '' then
      unchecked = M.review_note(t)
    end
    for _, why in ipairs({ unchecked or '', t.parked }) do
      if type(why) == 'string' and why ~= '' then
        table.insert(lines, '    ! ' .. why)
        map[#lines] = t.taskId
      end
    end
    local agents = require('conclave.agents')
    for _, s in ipairs(t.subtasks or {}) do
      local extra = ''
      if type(s.assignee) == 'string' and s.assignee ~= '' then
        local kept = type(s.assigneeName) == 'string' and s.assigneeName or nil
        extra = ' ' .. (agents.name(client_id, s.assignee) or kept or M.short_id(s.assignee))
      end
      if (s.attempts or 0) > 1 then
        extra = extra .. (' (attempt %d)'):format(s.attempts)
      end
      local after = ('  [%s]%s'):format(s.status, extra)
      local description = M.shorten(s.description or s.subtaskId, width - 6 - vim.fn.strdisplaywidth(after))
      table.insert(lines, ('    %s %s%s'):format(ICON[s.status] or '·', description, after))
      map[#lines] = t.taskId
    end
    -- After the subtasks, as the checks ran after their work.
    if type(t.checkCounts) == 'table' then
      table.insert(lines, '    ' .. M.checks_label(t.checkCounts) .. '  (C: output)')
      map[#lines] = t.taskId
    end
    local r = t.recovery
    if r and M.ACTIVE[t.status] then
      local message = agents.humanize(client_id, r.message or '')
      table.insert(lines, ('    ↻ %s %d/%d: %s'):format(r.action, r.attempt or 0, r.maxAttempts or 0, message))
      map[#lines] = t.taskId
    end
  end
  return lines, map
end

--- The text width of the widest window showing `bufnr` (the screen's when none does).
local function view_width(bufnr)
  local width = 0
  for _, win in ipairs(vim.fn.win_findbuf(bufnr)) do
    local info = vim.fn.getwininfo(win)[1]
    width = math.max(width, info.width - info.textoff)
  end
  return width > 0 and width or vim.o.columns
end

function M.render(bufnr)
  local client_id = buffers[bufnr]
  if not client_id or not vim.api.nvim_buf_is_valid(bufnr) then
    buffers[bufnr] = nil
    return
  end
  local lines, map = task_lines(client_id, view_width(bufnr))
  ui.set_lines(bufnr, lines)
  line_tasks[bufnr] = map
end

function M.render_all()
  for bufnr in pairs(buffers) do
    M.render(bufnr)
  end
end

--- The task under the cursor of a tasks buffer, or nil (the header, an empty list).
function M.task_at_cursor(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  local id = (line_tasks[bufnr] or {})[vim.api.nvim_win_get_cursor(0)[1]]
  if type(id) == 'string' and id ~= '' then
    return id
  end
end

--- Open the tasks list of a client (fetched with conclave/listTasks, then live).
function M.open(client)
  local name = ui.project_name('conclave://tasks', client)
  local bufnr, created = ui.scratch(name, client.root_dir, 'conclave-tasks')
  buffers[bufnr] = client.id
  vim.b[bufnr].conclave_nowrap = true
  if created then
    local commands = require('conclave.commands')
    local function map(lhs, fn, desc)
      vim.keymap.set('n', lhs, function()
        local id = M.task_at_cursor(bufnr)
        if id then
          fn(id)
        else
          vim.notify('Conclave: no task on this line; move to a task (or one of its subtasks)', vim.log.levels.INFO)
        end
      end, { buffer = bufnr, desc = desc, nowait = true })
    end
    map('<CR>', function(id)
      commands.log({ id })
    end, 'Conclave: task log')
    map('c', function(id)
      commands.cancel({ id })
    end, 'Conclave: cancel task')
    map('r', function(id)
      commands.retry({ id })
    end, 'Conclave: retry task')
    map('u', function(id)
      commands.undo({ id })
    end, 'Conclave: undo task')
    map('e', function(id)
      commands.report({ id })
    end, 'Conclave: error report')
    map('C', function(id)
      commands.checks({ id })
    end, 'Conclave: final report, checks and cost')
    vim.keymap.set('n', 'R', function()
      M.refresh(client)
    end, { buffer = bufnr, desc = 'Conclave: refresh tasks', nowait = true })
    vim.api.nvim_create_autocmd('BufWipeout', {
      buffer = bufnr,
      callback = function()
        buffers[bufnr] = nil
        line_tasks[bufnr] = nil
      end,
    })
    -- The titles give way to the window's width: draw again when it changes.
    vim.api.nvim_create_autocmd({ 'VimResized', 'WinResized' }, {
      callback = function()
        if not buffers[bufnr] then
          return true -- the buffer is gone: this autocmd goes too
        end
        M.render(bufnr)
      end,
    })
  end
  ui.show(bufnr)
  M.render(bufnr)
  M.refresh(client)
  if require('conclave.agents').agents[client.id] == nil then
    require('conclave.agents').refresh(client) -- assignees by name
  end
  return bufnr
end

--- Fetch every task of a client again.
function M.refresh(client, done)
  client_mod.request(client, 'conclave/listTasks', {}, function(err, result)
    if err then
      client_mod.report_error('conclave/listTasks', err)
    else
      for _, task in ipairs(result.tasks or {}) do
        local entry = M.tasks[task.taskId]
        -- a notification newer than this answer wins
        if not entry or entry.task.updatedAt == nil or (task.updatedAt or '') >= entry.task.updatedAt then
          seq = seq + 1
          M.tasks[task.taskId] = {
            task = task,
            client_id = client.id,
            seq = entry and entry.seq or seq,
            ended = entry and entry.ended,
          }
          if M.FINISHED[task.status] then
            learn_why_it_ended(client.id, task.taskId)
          end
        end
      end
      changed()
    end
    if done then
      done(err, result)
    end
  end)
end

return M
