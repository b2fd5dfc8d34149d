---@mod conclave.commands :Conclave {subcommand}
local client_mod = require('conclave.client')
local ui = require('conclave.ui')

local M = {}

local function client_or_nil()
  return client_mod.ensure(0)
end

--- A task id as typed: whole, or the short form `:Conclave tasks` shows (a prefix of
--- exactly one task this editor knows). `fn(id)` gets the whole id; an id unknown here
--- goes to the server as typed, which says whether it knows it.
local function resolve_task_id(client, typed, fn)
  local tasks = require('conclave.tasks')
  local function matching()
    local found = {}
    for _, e in ipairs(tasks.list(nil, client.id)) do
      if e.task.taskId == typed then
        return { typed }
      end
      if vim.startswith(e.task.taskId, typed) then
        table.insert(found, e.task.taskId)
      end
    end
    return found
  end
  local function decide(found)
    if #found > 1 then
      return vim.notify(
        ('Conclave: %s is the start of %d task ids; type more of it'):format(typed, #found),
        vim.log.levels.WARN
      )
    end
    fn(found[1] or typed)
  end
  local found = matching()
  if #found > 0 then
    return decide(found)
  end
  tasks.refresh(client, function()
    decide(matching())
  end)
end

--- Pick a task: `args[1]` if given (whole or short), else the only candidate, else
--- vim.ui.select.
local function with_task(args, filter, what, fn)
  local client = client_or_nil()
  if not client then
    return
  end
  local id = args[1]
  if type(id) == 'string' and id ~= '' then
    return resolve_task_id(client, id, function(whole)
      fn(client, whole)
    end)
  end
  local function choose()
    local tasks = require('conclave.tasks')
    local entries = tasks.list(filter, client.id)
    if #entries == 0 then
      return vim.notify(('Conclave: no task to %s'):format(what), vim.log.levels.INFO)
    end
    if #entries == 1 then
      return fn(client, entries[1].task.taskId)
    end
    vim.ui.select(entries, {
      prompt = ('Conclave: task to %s'):format(what),
      format_item = function(e)
        return ('%s [%s] %s'):format(e.task.title or e.task.taskId, e.task.status, tasks.short_id(e.task.taskId))
      end,
    }, function(choice)
      if choice then
        fn(client, choice.task.taskId)
      end
    end)
  end
  require('conclave.tasks').refresh(client, function()
    choose()
  end)
end

--- Submit a task. `opts.text` or the range's lines or vim.ui.input.
function M.submit(args, cmd)
  local client = client_or_nil()
  if not client then
    return
  end
  local bufnr = vim.api.nvim_get_current_buf()
  local text = table.concat(args, ' ')
  local context
  local fname = vim.api.nvim_buf_get_name(bufnr)
  local is_file = vim.bo[bufnr].buftype == '' and fname ~= ''
  if cmd and cmd.range and cmd.range > 0 then
    local lines = vim.api.nvim_buf_get_lines(bufnr, cmd.line1 - 1, cmd.line2, false)
    if is_file then
      local last = lines[#lines] or ''
      context = {
        files = { vim.uri_from_bufnr(bufnr) },
        selection = {
          uri = vim.uri_from_bufnr(bufnr),
          range = {
            start = { line = cmd.line1 - 1, character = 0 },
            ['end'] = { line = cmd.line2 - 1, character = #last },
          },
        },
      }
    end
    if text == '' then
      text = table.concat(lines, '\n')
    end
  elseif is_file then
    context = { files = { vim.uri_from_bufnr(bufnr) } }
  end
  local function send(description)
    if not description or vim.trim(description) == '' then
      return
    end
    local params = { description = description }
    if context then
      params.context = context
    end
    client_mod.request(client, 'conclave/submitTask', params, function(err, result)
      if err then
        return client_mod.report_error('conclave/submitTask', err)
      end
      vim.notify(
        ('Conclave: task submitted (%s)'):format(require('conclave.tasks').short_id(result.taskId)),
        vim.log.levels.INFO
      )
      vim.api.nvim_exec_autocmds('User', { pattern = 'ConclaveTaskSubmitted', modeline = false, data = result })
    end)
  end
  if text ~= '' then
    return send(text)
  end
  vim.ui.input({ prompt = 'Conclave task: ' }, send)
end

function M.tasks()
  local client = client_or_nil()
  if client then
    require('conclave.tasks').open(client)
  end
end

function M.agents()
  local client = client_or_nil()
  if client then
    require('conclave.agents').open(client)
  end
end

function M.whiteboard(args)
  local client = client_or_nil()
  if not client then
    return
  end
  if args[1] and args[1] ~= '' then
    require('conclave.whiteboard').open(client, args[1])
  else
    require('conclave.whiteboard').pick(client)
  end
end

function M.approvals()
  local client = client_or_nil()
  if client then
    require('conclave.approvals').list(client)
  end
end

local function active(task)
  return require('conclave.tasks').ACTIVE[task.status] == true
end

local function retryable(task)
  return task.status == 'failed' or task.status == 'cancelled'
end

function M.cancel(args)
  with_task(args, active, 'cancel', function(client, id)
    client_mod.request(client, 'conclave/cancelTask', { taskId = id }, function(err, result)
      if err then
        return client_mod.report_error('conclave/cancelTask', err)
      end
      vim.notify(
        result.cancelled and 'Conclave: task cancelled' or 'Conclave: the task was not cancelled',
        vim.log.levels.INFO
      )
    end)
  end)
end

function M.retry(args)
  with_task(args, retryable, 'retry', function(client, id)
    client_mod.request(client, 'conclave/retryTask', { taskId = id }, function(err)
      if err then
        return client_mod.report_error('conclave/retryTask', err)
      end
      vim.notify('Conclave: retrying the failed subtasks', vim.log.levels.INFO)
    end)
  end)
end

local function undoable(task)
  return require('conclave.tasks').FINISHED[task.status] == true and task.revertedBy == nil
end

local UNDO_ACTIONS = {
  restore = 'put back as before the task',
  remove = 'removed (the task created it)',
  recreate = 'written again (the task removed it)',
  unchanged = 'already as before the task',
  not_kept = 'left as it is (too large to have been kept)',
}
local CHANGES = { restore = true, remove = true, recreate = true }

--- The text of the undo buffer: each file's action, then the whole diff.
function M.undo_text(plan, title)
  local lines = { ('# Undo task %s — %s'):format(require('conclave.tasks').short_id(plan.taskId), title), '#' }
  for _, f in ipairs(plan.files or {}) do
    local edited = (f.editedSince and f.action ~= 'unchanged') and ' — changed since the task' or ''
    table.insert(lines, ('# %s: %s%s'):format(f.path, UNDO_ACTIONS[f.action] or f.action, edited))
  end
  table.insert(lines, '')
  return table.concat(lines, '\n') .. '\n' .. (plan.diff or '')
end

--- The choices of an undo: Undo, or what to do with the files edited since the task.
function M.undo_choices(plan)
  if #(plan.conflicts or {}) == 0 then
    return { 'Undo', 'Cancel' }
  end
  return { 'Overwrite my edits', 'Keep my edits', 'Cancel' }
end

local EDITED = { ['Overwrite my edits'] = 'overwrite', ['Keep my edits'] = 'keep' }

--- Take a finished task back: the diff in a scratch buffer (filetype diff), the question
--- through vim.ui.select, then conclave/undoTask with apply.
function M.undo(args)
  with_task(args, undoable, 'undo', function(client, id)
    client_mod.request(client, 'conclave/undoTask', { taskId = id }, function(err, plan)
      if err then
        return client_mod.report_error('conclave/undoTask', err)
      end
      local tasks = require('conclave.tasks')
      local known = tasks.tasks[plan.taskId]
      local title = (known and known.task and known.task.title) or plan.taskId
      local changing = 0
      for _, f in ipairs(plan.files or {}) do
        if CHANGES[f.action] then
          changing = changing + 1
        end
      end
      if changing == 0 then
        return vim.notify(
          ('Conclave: “%s” left nothing to put back: its files are as they were before it'):format(title),
          vim.log.levels.INFO
        )
      end
      ui.show_text('conclave://undo/' .. plan.taskId, client.root_dir, M.undo_text(plan, title), 'diff')
      local prompt = ('Undo “%s”? %d file%s put back as before the task'):format(
        title,
        changing,
        changing == 1 and '' or 's'
      )
      if #(plan.conflicts or {}) > 0 then
        prompt = prompt .. ('; you changed %s since the task'):format(table.concat(plan.conflicts, ', '))
      end
      vim.ui.select(M.undo_choices(plan), { prompt = prompt }, function(choice)
        if not choice or choice == 'Cancel' then
          return vim.notify('Conclave: nothing was undone', vim.log.levels.INFO)
        end
        local params = { taskId = plan.taskId, apply = true, editedFiles = EDITED[choice] }
        client_mod.request(client, 'conclave/undoTask', params, function(apply_err, done)
          if apply_err then
            return client_mod.report_error('conclave/undoTask', apply_err)
          end
          local reverted = done.reverted or { restored = {}, kept = {} }
          local message = #(reverted.restored or {}) > 0
              and ('put back %s'):format(table.concat(reverted.restored, ', '))
            or 'nothing needed putting back'
          for _, kept in ipairs(reverted.kept or {}) do
            message = message .. ('; left %s as it is (%s)'):format(kept.path, kept.reason)
          end
          vim.notify(('Conclave: undid “%s”: %s'):format(title, message), vim.log.levels.INFO)
          tasks.refresh(client)
        end)
      end)
    end)
  end)
end

function M.report(args)
  with_task(args, nil, 'report on', function(client, id)
    client_mod.request(client, 'conclave/errorReport', { taskId = id }, function(err, result)
      if err then
        return client_mod.report_error('conclave/errorReport', err)
      end
      local bufnr = ui.show_text('conclave://report/' .. id, client.root_dir, result.markdown or '', 'markdown')
      vim.b[bufnr].conclave_report_path = result.path
    end)
  end)
end

function M.log(args)
  with_task(args, nil, 'show the log of', function(client, id)
    client_mod.request(client, 'conclave/taskLog', { taskId = id }, function(err, result)
      if err then
        return client_mod.report_error('conclave/taskLog', err)
      end
      ui.show_text('conclave://log/' .. id, client.root_dir, result.text or '', 'conclavelog')
    end)
  end)
end

function M.checks(args)
  with_task(args, nil, 'show the checks of', function(client, id)
    require('conclave.checks').open(client, id)
  end)
end

M.subcommands = {
  submit = M.submit,
  tasks = M.tasks,
  agents = M.agents,
  whiteboard = M.whiteboard,
  approvals = M.approvals,
  cancel = M.cancel,
  retry = M.retry,
  report = M.report,
  log = M.log,
  checks = M.checks,
  undo = M.undo,
}

M.names =
  { 'submit', 'tasks', 'agents', 'whiteboard', 'approvals', 'cancel', 'retry', 'undo', 'report', 'log', 'checks' }

--- Entry point of the user command.
function M.run(cmd)
  local args = vim.deepcopy(cmd.fargs)
  local sub = table.remove(args, 1)
  if not sub then
    return M.tasks()
  end
  local fn = M.subcommands[sub]
  if not fn then
    return vim.notify(
      ("Conclave: unknown subcommand '%s' (one of: %s)"):format(sub, table.concat(M.names, ', ')),
      vim.log.levels.ERROR
    )
  end
  fn(args, cmd)
end

local function task_ids(filter)
  return vim.tbl_map(function(e)
    return e.task.taskId
  end, require('conclave.tasks').list(filter))
end

--- Completion of `:Conclave`.
function M.complete(arglead, cmdline)
  local words = vim.split(cmdline:gsub('^%s*%S+%s*', '', 1), '%s+', { trimempty = false })
  local candidates
  if #words <= 1 then
    candidates = M.names
  else
    local sub = words[1]
    if #words > 2 then
      return {}
    end
    if sub == 'whiteboard' then
      candidates = require('conclave.whiteboard').ids()
    elseif sub == 'cancel' then
      candidates = task_ids(active)
    elseif sub == 'retry' then
      candidates = task_ids(retryable)
    elseif sub == 'undo' then
      candidates = task_ids(undoable)
    elseif sub == 'report' or sub == 'log' or sub == 'checks' then
      candidates = task_ids()
    else
      return {}
    end
  end
  return vim.tbl_filter(function(c)
    return vim.startswith(c, arglead)
  end, candidates)
end

return M
