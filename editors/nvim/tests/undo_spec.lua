-- Taking a task back from Neovim against the real server: `:Conclave undo` with a short
-- id shows the diff in a scratch buffer and asks through vim.ui.select (Undo / Cancel, or
-- Overwrite my edits / Keep my edits naming the files changed since), then puts the files
-- back through the editor; `u` in the tasks buffer does the same; the list says undone.
local h = require('helpers')

local function write(path, text)
  local fd = assert(io.open(path, 'w'))
  fd:write(text)
  fd:close()
end

local function rewriting()
  local dir = h.workspace({
    { match = 'Plan this task', text = vim.json.encode({ subtasks = { { description = 'Rewrite the files' } } }) },
    {
      match = 'Rewrite the files',
      toolCalls = {
        { name = 'file_write', arguments = { path = 'a.txt', content = 'TASK a\n' } },
        { name = 'file_write', arguments = { path = 'notes.txt', content = 'task notes\n' } },
        { name = 'file_write', arguments = { path = 'new.txt', content = 'made by the task\n' } },
      },
    },
    { match = 'created new.txt', text = 'Rewrote them.' },
  })
  write(dir .. '/a.txt', 'original a\n')
  write(dir .. '/notes.txt', 'person notes\n')
  return dir
end

--- Captured notifications, newest last.
local function capture_notify()
  local said = {}
  vim.notify = function(msg, level)
    table.insert(said, { msg = msg, level = level })
  end
  return said
end

describe(':Conclave undo against the real server', function()
  local dir
  local original_notify = vim.notify

  after_each(function()
    vim.notify = original_notify
    if dir then
      h.stop(dir)
      dir = nil
    end
  end)

  it('shows the diff, asks, cancels, then keeps the edited file and puts back the rest', function()
    dir = rewriting()
    h.start(dir)
    vim.cmd('Conclave submit Rewrite the files')
    h.wait('the task to complete', function()
      return h.only_task() and h.only_task().status == 'completed'
    end)
    assert.are.equal('TASK a\n', h.read(dir .. '/a.txt'))
    local task_id = h.only_task().taskId
    local short = require('conclave.tasks').short_id(task_id)
    local commands = require('conclave.commands')
    assert.are.same({ task_id }, commands.complete('', 'Conclave undo '), 'finished tasks complete')

    local said = capture_notify()
    local asked = h.capture_selects()
    vim.cmd('Conclave undo ' .. short)
    h.wait('the question', function()
      return #asked == 1
    end)
    local diff_buf = vim.fn.bufnr('conclave://undo/' .. task_id)
    assert.is_true(diff_buf > 0, 'the diff buffer')
    assert.are.equal('diff', vim.bo[diff_buf].filetype)
    assert.are.equal('nofile', vim.bo[diff_buf].buftype)
    local text = h.buf_text(diff_buf)
    assert.truthy(text:find('# Undo task ' .. short .. ' — Rewrite the files', 1, true), text)
    assert.truthy(text:find('# a.txt: put back as before the task\n', 1, true), text)
    assert.truthy(text:find('# new.txt: removed (the task created it)\n', 1, true), text)
    assert.truthy(text:find('--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-TASK a\n+original a', 1, true), text)
    assert.truthy(text:find('--- a/new.txt\n+++ /dev/null\n', 1, true), text)
    assert.are.same({ 'Undo', 'Cancel' }, asked[1].items)
    assert.are.equal('Undo “Rewrite the files”? 3 files put back as before the task', asked[1].opts.prompt)
    asked[1].on_choice('Cancel')
    assert.are.equal('Conclave: nothing was undone', said[#said].msg)
    assert.are.equal('TASK a\n', h.read(dir .. '/a.txt'))
    assert.are.equal('made by the task\n', h.read(dir .. '/new.txt'))

    -- The person edits notes.txt: `u` on the task in the list asks again, naming it.
    write(dir .. '/notes.txt', 'my own edit\n')
    vim.cmd('Conclave tasks')
    local tasks_buf = vim.api.nvim_get_current_buf()
    h.wait('the task in the list', function()
      return h.buf_text(tasks_buf):find(short, 1, true)
    end)
    assert.truthy(h.buf_text(tasks_buf):find('u undo', 1, true), 'the header names the key')
    local line
    for i, l in ipairs(vim.api.nvim_buf_get_lines(tasks_buf, 0, -1, false)) do
      if l:find(short, 1, true) then
        line = i
      end
    end
    vim.api.nvim_win_set_cursor(0, { line, 0 })
    vim.api.nvim_feedkeys('u', 'x', false)
    h.wait('the second question', function()
      return #asked == 2
    end)
    assert.are.same({ 'Overwrite my edits', 'Keep my edits', 'Cancel' }, asked[2].items)
    assert.are.equal(
      'Undo “Rewrite the files”? 3 files put back as before the task; you changed notes.txt since the task',
      asked[2].opts.prompt
    )
    assert.truthy(
      h.buf_text(vim.fn.bufnr('conclave://undo/' .. task_id))
        :find('# notes.txt: put back as before the task — changed since the task', 1, true)
    )
    asked[2].on_choice('Keep my edits')
    h.wait('a.txt put back', function()
      return h.read(dir .. '/a.txt') == 'original a\n'
    end)
    h.wait('new.txt removed', function()
      return h.read(dir .. '/new.txt') == nil
    end)
    assert.are.equal('my own edit\n', h.read(dir .. '/notes.txt'), 'the person kept their edit')
    h.wait('what was done, said', function()
      return said[#said].msg:find('undid', 1, true)
    end)
    assert.are.equal(
      'Conclave: undid “Rewrite the files”: put back a.txt, new.txt; left notes.txt as it is (it was changed after the task changed it)',
      said[#said].msg
    )

    -- The list marks it undone, and it is no longer offered.
    h.wait('the list to say undone', function()
      return h.buf_text(tasks_buf):find('    ↶ undone: its files were put back as before it', 1, true)
    end)
    assert.are.same({}, commands.complete('', 'Conclave undo '))
    vim.cmd('Conclave undo')
    h.wait('nothing to undo, said', function()
      return said[#said].msg == 'Conclave: no task to undo'
    end)
  end)
end)
