-- A task's end is said on the command line in one line: a message wider than the command
-- line would stop Neovim at a hit-enter prompt after every task.
local tasks = require('conclave.tasks')

describe('the notice of a finished task', function()
  local notify = vim.notify
  local said

  before_each(function()
    said = {}
    vim.notify = function(msg, level)
      table.insert(said, { msg = msg, level = level })
    end
  end)

  after_each(function()
    vim.notify = notify
    for id in pairs(tasks.tasks) do
      tasks.tasks[id] = nil
    end
  end)

  local function finish(title, extra)
    local task =
      vim.tbl_extend('force', { taskId = 'task-' .. vim.uv.hrtime(), title = title, status = 'running' }, extra or {})
    tasks.on_task_updated(1, task)
    tasks.on_task_updated(1, vim.tbl_extend('force', task, { status = 'completed' }))
    return said[#said]
  end

  it('fits the command line, keeping the start of a long title', function()
    local title = 'Write slug.py with slugify(title): the words of title, lower-case, joined by hyphens, and its tests'
    local notice = finish(title)
    assert.is_truthy(vim.fn.strdisplaywidth(notice.msg) <= vim.v.echospace, notice.msg)
    assert.matches("^Conclave: task 'Write slug%.py with slugify.*…' completed$", notice.msg)
  end)

  it('says a short title whole', function()
    assert.are.equal("Conclave: task 'Write hello.txt' completed", finish('Write hello.txt').msg)
  end)

  it('counts wide characters by the cells they take', function()
    local notice = finish(string.rep('書', 60))
    assert.is_truthy(vim.fn.strdisplaywidth(notice.msg) <= vim.v.echospace, notice.msg)
  end)
end)
