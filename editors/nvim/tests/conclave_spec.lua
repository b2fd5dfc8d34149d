-- The Neovim plugin driving the real `conclave serve --stdio` on a scripted model.
local h = require('helpers')

local function plan(...)
  local subtasks = {}
  for _, d in ipairs({ ... }) do
    table.insert(subtasks, { description = d })
  end
  return { match = 'Plan this task', text = vim.json.encode({ subtasks = subtasks }) }
end

local function write_step(desc, path, content, extra)
  return vim.tbl_extend('force', {
    match = desc,
    toolCalls = { { name = 'file_write', arguments = { path = path, content = content } } },
  }, extra or {})
end

local function subtask(task, description)
  for _, s in ipairs(task.subtasks or {}) do
    if s.description == description then
      return s
    end
  end
end

describe('conclave.nvim against the real server', function()
  local dir

  after_each(function()
    if dir then
      h.stop(dir)
      dir = nil
    end
  end)

  it('submits a task: files land on disk through applyEdit and the whiteboard buffer follows the board', function()
    dir = h.workspace({
      plan('Create a.txt', 'Create b.txt'),
      write_step('Create a.txt', 'a.txt', 'a\n'),
      -- slow enough to see a.txt "being generated" while its subtask still runs
      { match = 'created a.txt', text = 'Wrote a.txt.', delayMs = 1500 },
      write_step('Create b.txt', 'b.txt', 'b\n'),
      { match = 'created b.txt', text = 'Wrote b.txt.' },
    })
    local client = h.start(dir)

    vim.cmd('Conclave whiteboard global')
    local board_buf = vim.api.nvim_get_current_buf()
    assert.are.equal('conclave://whiteboard/global', vim.api.nvim_buf_get_name(board_buf))
    assert.are.equal('nofile', vim.bo[board_buf].buftype)
    h.wait('the subscription answer', function()
      return vim.b[board_buf].conclave_whiteboard_version >= 0
    end)
    local first_version = vim.b[board_buf].conclave_whiteboard_version
    assert.is_false(vim.bo[board_buf].modifiable)

    vim.cmd('Conclave submit Make a.txt and b.txt')
    h.wait('the task to appear', h.only_task)

    -- a.txt exists on disk while its subtask is still running, and its buffer says so
    local a_path = dir .. '/a.txt'
    h.wait('a.txt on disk', function()
      return h.read(a_path) == 'a\n'
    end)
    local a_buf = vim.fn.bufnr(a_path)
    assert.is_true(a_buf > 0, 'the edit loaded a.txt into a buffer')
    h.wait('the "being generated" virtual text on a.txt', function()
      local marks = vim.api.nvim_buf_get_extmarks(a_buf, require('conclave.status').ns, 0, -1, { details = true })
      return #marks == 1 and marks[1][4].virt_text[1][1]:find('generating', 1, true)
    end)

    h.wait('the task to complete', function()
      return h.only_task().status == 'completed'
    end)
    assert.are.equal('b\n', h.read(dir .. '/b.txt'))
    assert.are.equal('a\n', h.read(a_path), 'buffer and disk agree: no extra newline')
    assert.is_false(vim.bo[a_buf].modified, 'the applied edit was written')
    assert.are.same({ 'a' }, vim.api.nvim_buf_get_lines(a_buf, 0, -1, false))
    h.wait('the virtual text to go once the subtask completed', function()
      return #vim.api.nvim_buf_get_extmarks(a_buf, require('conclave.status').ns, 0, -1, {}) == 0
    end)
    assert.are.equal('idle', require('conclave').status())

    -- the whiteboard buffer caught up with the latest board, live
    local latest = h.request(client, 'conclave/readWhiteboard', { id = 'global' })
    assert.is_true(latest.version > first_version, 'the team wrote on the global board')
    h.wait('the whiteboard buffer to show the latest board', function()
      return vim.b[board_buf].conclave_whiteboard_version == latest.version
    end)
    local expected = latest.content:gsub('\n$', '')
    assert.are.equal(expected, h.buf_text(board_buf))
    assert.is_false(vim.bo[board_buf].modifiable)
    assert.is_false(vim.bo[board_buf].modified)

    -- the tasks list shows the finished task
    vim.cmd('Conclave tasks')
    local tasks_buf = vim.api.nvim_get_current_buf()
    h.wait('the tasks buffer', function()
      return h.buf_text(tasks_buf):find('[completed 100%]', 1, true)
    end)
    assert.truthy(h.buf_text(tasks_buf):find('Create b.txt  [completed]', 1, true))
    -- and why it ended: the first line of its result
    h.wait('why the task ended, under it', function()
      return h.buf_text(tasks_buf):find('    = 2 of 2 subtasks completed', 1, true)
    end)

    -- the short id the list shows is accepted back
    local task_id = h.only_task().taskId
    vim.cmd('Conclave log ' .. require('conclave.tasks').short_id(task_id))
    h.wait('the task log opened by its short id', function()
      return vim.api.nvim_buf_get_name(0):find('conclave://log/' .. task_id, 1, true)
    end)
    -- with the top agent's final report on the task, line by line
    h.wait('the final report in the task log', function()
      return h.buf_text(0):find('final report: The task completed: 2 of 2 subtasks completed.', 1, true)
    end)

    -- C on the finished task in the tasks list opens its detail: the final report first,
    -- headed by the top agent who wrote it, then what the task cost and its checks
    vim.cmd('Conclave tasks')
    local row
    for i, l in ipairs(vim.api.nvim_buf_get_lines(tasks_buf, 0, -1, false)) do
      if l:find('[completed 100%]', 1, true) then
        row = i
      end
    end
    vim.api.nvim_win_set_cursor(0, { row, 0 })
    vim.api.nvim_feedkeys('C', 'x', false)
    local detail_buf
    h.wait('the task detail', function()
      detail_buf = vim.api.nvim_get_current_buf()
      return vim.api.nvim_buf_get_name(detail_buf) == 'conclave://checks/' .. task_id
    end)
    h.wait('the final report in the task detail', function()
      return h.buf_text(detail_buf):find('\n    The task completed: 2 of 2 subtasks completed.\n', 1, true)
    end)
    local report = h.request(client, 'conclave/getTask', { taskId = task_id }).finalReport
    assert.truthy(report.by:match('^top%-'), report.by)
    local lines = vim.api.nvim_buf_get_lines(detail_buf, 0, -1, false)
    assert.truthy(lines[1]:find('"Make a.txt and b.txt"  [completed]', 1, true), lines[1])
    local heading = ('Final report by %s (%s %s UTC)'):format(report.by, report.at:match('^(%S+)T(%d+:%d+)'))
    assert.are.same({ heading, '    The task completed: 2 of 2 subtasks completed.' }, { lines[3], lines[4] })
    local text = vim.split(vim.trim(report.text), '\n', { plain = true })
    assert.is_true(#text > 1, 'the report has more than its outcome')
    for i, l in ipairs(text) do
      assert.are.equal(l == '' and '' or ('    ' .. l), lines[3 + i])
    end
    assert.are.equal('', lines[4 + #text])
    assert.truthy(lines[5 + #text]:match('^Tokens: '), lines[5 + #text])

    -- wiping the whiteboard buffer unsubscribes
    local client_mod = require('conclave.client')
    local original = client_mod.request
    local unsubscribed
    client_mod.request = function(c, method, params, cb)
      return original(c, method, params, function(err, result)
        if method == 'conclave/unsubscribeWhiteboard' then
          unsubscribed = { params = params, err = err or false }
        end
        if cb then
          cb(err, result)
        end
      end)
    end
    vim.api.nvim_buf_delete(board_buf, { force = true })
    local ok = pcall(h.wait, 'conclave/unsubscribeWhiteboard', function()
      return unsubscribed ~= nil
    end, 10000)
    client_mod.request = original
    assert.is_true(ok)
    assert.are.same({ params = { id = 'global' }, err = false }, unsubscribed)
  end)

  it('answers an escalation through vim.ui.select: abort fails the task', function()
    dir = h.workspace({
      plan('Create a.txt', 'Create c.txt'),
      write_step('Create a.txt', 'a.txt', 'a\n'),
      { match = 'created a.txt', text = 'Wrote a.txt.' },
      { match = 'Create c.txt', error = 'unauthorized', ['repeat'] = true },
    })
    local client = h.start(dir)
    local asked = h.capture_selects()

    vim.cmd('Conclave submit Make a.txt and c.txt')
    h.wait('the escalation to be asked', function()
      return #asked == 1
    end)
    local ids = vim.tbl_map(function(o)
      return o.id
    end, asked[1].items)
    assert.are.same({ 'retry', 'reassign', 'modify', 'abort' }, ids)
    assert.truthy(asked[1].opts.prompt:find('escalation (critical)', 1, true))
    assert.truthy(
      asked[1].float_text and asked[1].float_text:find('Severity: critical', 1, true),
      'the detail was shown in a float'
    )
    h.wait('the statusline to show the escalation', function()
      -- with what the escalated task spent so far (its plan, a.txt)
      return require('conclave').status():match('^⚠ escalated · [%d.]+k? tokens$')
    end)
    -- the request was answered with null at once: the server still lists it as pending
    assert.are.equal(1, #h.request(client, 'conclave/listApprovals').approvals)

    asked[1].on_choice(asked[1].items[4]) -- abort
    h.wait('the task to fail', function()
      return h.only_task().status == 'failed'
    end)
    local task = h.only_task()
    assert.are.equal('completed', subtask(task, 'Create a.txt').status)
    assert.are.equal('failed', subtask(task, 'Create c.txt').status)
    assert.are.same({}, h.request(client, 'conclave/listApprovals').approvals)
    h.wait('the statusline to show the failure', function()
      return require('conclave').status() == '✖ failed'
    end)
    for _, win in ipairs(vim.api.nvim_list_wins()) do
      assert.are.equal('', vim.api.nvim_win_get_config(win).relative, 'the float was closed')
    end
  end)

  it('keeps a dismissed approval pending and asks again from :Conclave approvals', function()
    dir = h.workspace({
      plan('Create c.txt'),
      { match = 'Create c.txt', error = 'unauthorized', ['repeat'] = true },
    })
    local client = h.start(dir)
    local calls = {}
    vim.ui.select = function(items, opts, on_choice)
      table.insert(calls, { items = items, opts = opts })
      on_choice(nil) -- dismissed
    end
    vim.cmd('Conclave submit Create c.txt')
    h.wait('the escalation to be asked', function()
      return #calls == 1
    end)
    h.wait('the task to wait on the escalation', function()
      return h.only_task().status == 'escalated'
    end)
    local pending = h.request(client, 'conclave/listApprovals').approvals
    assert.are.equal(1, #pending)
    local approval_id = pending[1].approvalId
    assert.are.equal('escalation', pending[1].kind)

    local listed
    vim.ui.select = function(items, opts, on_choice)
      table.insert(calls, { items = items, opts = opts })
      if items[1] and items[1].approvalId then
        listed = items
        on_choice(items[1])
      else
        for _, o in ipairs(items) do
          if o.id == 'abort' then
            on_choice(o)
          end
        end
      end
    end
    vim.cmd('Conclave approvals')
    h.wait('the pending approval to be listed', function()
      return listed ~= nil
    end)
    assert.are.equal(1, #listed)
    assert.are.equal(approval_id, listed[1].approvalId)
    h.wait('the task to fail after abort', function()
      return h.only_task().status == 'failed'
    end)
    assert.are.same({}, h.request(client, 'conclave/listApprovals').approvals)
    assert.are.equal(3, #calls)
  end)

  it('shows a retry in the statusline while the subtask is retried, then idle', function()
    dir = h.workspace({
      plan('Create b.txt'),
      { match = 'Create b.txt', error = { kind = 'http', status = 400 }, times = 1 },
      write_step('Create b.txt', 'b.txt', 'b\n', { delayMs = 2000 }),
      { match = 'created b.txt', text = 'Wrote b.txt.' },
    })
    h.start(dir)
    local seen = {}
    vim.api.nvim_create_autocmd('User', {
      pattern = 'ConclaveStatus',
      callback = function(ev)
        table.insert(seen, ev.data.status)
      end,
    })
    vim.cmd('Conclave submit Create b.txt')
    h.wait('the retry in the statusline', function()
      return require('conclave').status():match('^↻ retry %d+/%d+ · [%d.]+k? tokens$')
    end)
    local task = h.only_task()
    assert.are.equal('retry', task.recovery.action)
    h.wait('the task to complete', function()
      return h.only_task().status == 'completed'
    end)
    assert.are.equal('b\n', h.read(dir .. '/b.txt'))
    h.wait('idle', function()
      return require('conclave').status() == 'idle'
    end)
    assert.truthy(vim.tbl_contains(seen, '1 running'), vim.inspect(seen))
    assert.are.equal('idle', seen[#seen])
  end)

  it('shows a fileChange approval as a diff, writes after approve; submit takes the range', function()
    dir = h.workspace({
      plan('Create d.txt'),
      write_step('make d.txt', 'd.txt', 'd\n'),
      { match = 'created d.txt', text = 'Wrote d.txt.' },
    }, '[approvals]\nfileChanges = "ask"')
    h.start(dir)
    local fd = assert(io.open(dir .. '/notes.md', 'w'))
    fd:write('intro\nPlease make d.txt\n')
    fd:close()
    vim.cmd.edit(dir .. '/notes.md')
    h.wait('the file buffer to be attached (autostart)', function()
      return #vim.lsp.get_clients({ bufnr = 0, name = 'conclave' }) == 1
    end)

    local seen
    vim.ui.select = function(items, opts, on_choice)
      local diff_bufs = {}
      for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
        if vim.wo[win].diff then
          table.insert(diff_bufs, h.buf_text(vim.api.nvim_win_get_buf(win)))
        end
      end
      seen = {
        ids = vim.tbl_map(function(o)
          return o.id
        end, items),
        prompt = opts.prompt,
        diff = diff_bufs,
        tabs = #vim.api.nvim_list_tabpages(),
        on_disk = h.read(dir .. '/d.txt'),
      }
      vim.schedule(function()
        on_choice(items[1]) -- approve
      end)
    end
    vim.cmd('2Conclave submit')
    h.wait('the task', h.only_task)
    assert.are.equal('Please make d.txt', h.only_task().title)
    h.wait('the fileChange approval', function()
      return seen ~= nil
    end)
    assert.are.same({ 'approve', 'reject' }, seen.ids)
    assert.truthy(seen.prompt:find('fileChange', 1, true))
    assert.are.same({ '', 'd' }, seen.diff, 'before and after side by side in diff mode')
    assert.are.equal(2, seen.tabs)
    assert.is_nil(seen.on_disk, 'nothing is written before approve')
    h.wait('the task to complete', function()
      return h.only_task().status == 'completed'
    end)
    assert.are.equal('d\n', h.read(dir .. '/d.txt'))
    h.wait('the diff tab to close', function()
      return #vim.api.nvim_list_tabpages() == 1
    end)

    vim.cmd('Conclave agents')
    local agents_buf = vim.api.nvim_get_current_buf()
    assert.are.equal('conclave://agents', vim.api.nvim_buf_get_name(agents_buf))
    h.wait('the team in the agents buffer', function()
      local text = h.buf_text(agents_buf)
      return text:find('top', 1, true) and text:find('mid', 1, true) and text:find('bottom', 1, true)
    end)
    assert.is_false(vim.bo[agents_buf].modifiable)
  end)

  it(':checkhealth conclave reports the binary, the server, the protocol and .conclave/', function()
    dir = h.workspace({ plan('Create a.txt') })
    assert.are.equal(0, vim.system({ 'git', 'init', '-q', dir }):wait().code)
    h.start(dir)
    vim.cmd('checkhealth conclave')
    local text = h.buf_text(vim.api.nvim_get_current_buf())
    assert.truthy(text:find('binary found: .*%(conclave 0%.1%.0%)'), text)
    assert.truthy(text:find('server running for ' .. dir, 1, true), text)
    assert.truthy(text:find('protocol version 1 OK', 1, true), text)
    assert.truthy(text:find('llm.provider = "scripted"', 1, true), text)
    assert.truthy(text:find(dir .. "/.conclave holds the server's state, and git does not ignore it", 1, true), text)
    assert.truthy(text:find('Add a line `.conclave/` to ' .. dir .. '/.gitignore', 1, true), text)
    assert.are.same({ 'whiteboard' }, vim.fn.getcompletion('Conclave wh', 'cmdline'))
    assert.are.same({ 'layer:top' }, vim.fn.getcompletion('Conclave whiteboard layer:t', 'cmdline'))
  end)
end)
