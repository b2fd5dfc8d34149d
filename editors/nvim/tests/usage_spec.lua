-- What a task cost and how it was checked, as a person sees it in Neovim: tokens and cost
-- in the tasks buffer and the statusline, the checks with their rule ids under the task,
-- `C` opening the checks with the failing output, and the token-limit approval saying
-- what was spent. The formatting first, then the real server on a priced scripted model.
local h = require('helpers')
local usage = require('conclave.usage')

local PRICED = table.concat({ 'writes = "disk"', '[pricing."scripted"]', 'input = 1.0', 'output = 2.0' }, '\n')

local function plan(description)
  return { match = 'Plan this task', text = vim.json.encode({ subtasks = { { description = description } } }) }
end

--- The lines of `bufnr` that contain `text` (plain).
local function lines_with(bufnr, text)
  return vim.tbl_filter(function(l)
    return l:find(text, 1, true) ~= nil
  end, vim.api.nvim_buf_get_lines(bufnr, 0, -1, false))
end

describe('tokens and cost', function()
  it('read as people read them', function()
    local tokens = {}
    for _, n in ipairs({ 0, 812, 1000, 1234, 12345, 99999, 123456, 999999, 1500000 }) do
      table.insert(tokens, usage.format_tokens(n))
    end
    assert.are.same({ '0', '812', '1k', '1.2k', '12.3k', '100k', '123k', '1M', '1.5M' }, tokens)
    assert.are.equal('$0.0042', usage.format_cost(0.0042))
    assert.are.equal('$12.35', usage.format_cost(12.345))
    assert.are.equal(
      '12.3k tokens · $0.0042',
      usage.label({ inputTokens = 12000, outputTokens = 345, calls = 3, costUsd = 0.0042 })
    )
    assert.are.equal('812 tokens', usage.label({ inputTokens = 800, outputTokens = 12, calls = 1, costUsd = vim.NIL }))
    assert.are.equal(
      '12,000 in · 345 out · 3 calls · cost unknown: the model has no [pricing] entry in conclave.toml',
      usage.detail({ inputTokens = 12000, outputTokens = 345, calls = 3, costUsd = vim.NIL })
    )
    local sum = usage.add({
      { inputTokens = 10, outputTokens = 1, calls = 1, costUsd = 0.5 },
      { inputTokens = 5, outputTokens = 0, calls = 1, costUsd = vim.NIL },
    })
    assert.are.equal('16 tokens · $0.5000', usage.label(sum))
    assert.is_nil(usage.add({}))
  end)
end)

describe('cost and checks against the real server', function()
  local dir

  after_each(function()
    if dir then
      h.stop(dir)
      dir = nil
    end
  end)

  it('shows tokens and cost live, the failed checks with their rules, and C opens their output', function()
    -- greet() promises a value and returns none: the stub and contract checks fail, the
    -- model has no fix, and the task fails with its checks' findings.
    dir = h.workspace({
      plan('Write hello.py'),
      {
        match = 'Write hello.py',
        -- after the plan was paid for: time to see the running task's figures
        delayMs = 1500,
        toolCalls = {
          {
            name = 'file_write',
            arguments = { path = 'hello.py', content = 'def greet():\n    """Return the greeting."""\n    pass\n' },
          },
        },
      },
      { match = 'created hello.py', text = 'Wrote hello.py.' },
      { text = 'I cannot fix it.', ['repeat'] = true },
    }, PRICED .. '\n[verify]\nacceptanceTests = false\nmaxRounds = 1\n[approvals]\ncommands = "auto"')
    -- No retries: the failure ends the task at once.
    local once = { maxRetries = 0, baseDelayMs = 10 }
    h.start(dir, { recovery = { severity = { low = once, medium = once, high = once } } })
    vim.ui.select = function(items, _, on_choice)
      for _, item in ipairs(items) do
        if item.id == 'abort' then
          return on_choice(item)
        end
      end
      on_choice(items[1])
    end
    local seen = {}
    vim.api.nvim_create_autocmd('User', {
      pattern = 'ConclaveStatus',
      callback = function(ev)
        table.insert(seen, ev.data.status)
      end,
    })

    vim.cmd('Conclave tasks')
    local tasks_buf = vim.api.nvim_get_current_buf()
    vim.cmd('Conclave submit Write hello.py with greet()')
    h.wait('the task to appear', h.only_task)
    -- Live: while it runs, its line says what it spent so far.
    h.wait('tokens and cost on the running task', function()
      local t = h.only_task()
      return require('conclave.tasks').ACTIVE[t.status]
        and #lines_with(tasks_buf, '  ' .. usage.label(t.usageTotal or { calls = 0 })) == 1
        and t.usageTotal
    end)
    h.wait('the task to fail its checks', function()
      return h.only_task().status == 'failed'
    end)
    local task = h.only_task()
    local running = vim.tbl_filter(function(s)
      return s:match('^%d+ running · [%d.]+k? tokens · %$0%.%d%d%d%d$') ~= nil
    end, seen)
    assert.is_true(#running > 0, 'the statusline showed what the running task spent: ' .. vim.inspect(seen))
    h.wait('the statusline to show the failure alone', function()
      return require('conclave').status() == '✖ failed'
    end)

    -- The tasks buffer: the task with its tokens and cost, its checks counted under it.
    local label = usage.label(task.usageTotal)
    assert.truthy(label:match('^[%d.]+k? tokens · %$0%.%d%d%d%d$'), label)
    h.wait('the finished task line with its cost', function()
      return #lines_with(tasks_buf, '[failed]  ' .. require('conclave.tasks').short_id(task.taskId) .. '  ' .. label)
        == 1
    end)
    local counts = task.checkCounts
    assert.are.equal(2, counts.failed)
    local checks_line = ('    checks ✖ 2 failed [python.stub, python.unkept-return] · %d passed  (C: output)'):format(
      counts.passed
    )
    h.wait('the checks line under the task', function()
      return #lines_with(tasks_buf, checks_line) == 1
    end)

    -- C on the task opens its checks and cost, failures first, with their output.
    local row
    for i, l in ipairs(vim.api.nvim_buf_get_lines(tasks_buf, 0, -1, false)) do
      if l == checks_line then
        row = i
      end
    end
    vim.api.nvim_win_set_cursor(0, { row, 0 })
    vim.api.nvim_feedkeys('C', 'x', false)
    local checks_buf
    h.wait('the checks buffer', function()
      checks_buf = vim.api.nvim_get_current_buf()
      return vim.api.nvim_buf_get_name(checks_buf) == 'conclave://checks/' .. task.taskId
        and #lines_with(checks_buf, 'stub scan') > 0
    end)
    assert.are.equal('nofile', vim.bo[checks_buf].buftype)
    assert.is_false(vim.bo[checks_buf].modifiable)
    local lines = vim.api.nvim_buf_get_lines(checks_buf, 0, -1, false)
    assert.truthy(lines[1]:find('Checks and cost of "Write hello.py with greet()"  [failed]', 1, true), lines[1])
    local detail = h.request(require('conclave.client').clients()[1], 'conclave/getTask', { taskId = task.taskId })
    -- after the top agent's final report, once written (the task's detail opens with it)
    local tokens = vim.tbl_filter(function(l)
      return l:match('^Tokens: ') ~= nil
    end, lines)
    assert.are.same({ 'Tokens: ' .. usage.detail(detail.usage.total) }, tokens)
    local check_lines = vim.tbl_filter(function(l)
      return l:match('^✖ ') or l:match('^✔ ') or l:match('^⊘ ')
    end, lines)
    -- failures first, each with its rule ids
    assert.are.equal('✖ stubs  stub scan  [failed]  python.stub', check_lines[1], vim.inspect(lines))
    assert.are.equal('✖ contracts  function contracts  [failed]  python.unkept-return', check_lines[2])
    -- the stub scan's whole output, under it
    local stub
    for _, c in ipairs(detail.checks) do
      if c.kind == 'stubs' then
        stub = c
      end
    end
    assert.truthy(vim.trim(stub.detail) ~= '', 'the failed check has an output')
    for _, l in ipairs(vim.split(vim.trim(stub.detail), '\n', { plain = true })) do
      assert.are.equal(1, #lines_with(checks_buf, '    │ ' .. l), l)
    end
    assert.are.equal(1, #lines_with(checks_buf, '[passed]  syntax.python'))
    -- the agents' shares: the mid planned, a bottom agent wrote
    local shares = 0
    for _, l in ipairs(lines) do
      if l:match('^    %S+%s+[%d.]+k? tokens · %$0%.%d%d%d%d$') then
        shares = shares + 1
      end
    end
    assert.is_true(shares >= 2, vim.inspect(lines))
  end)

  it('shows the token-limit approval with what the task spent', function()
    dir = h.workspace({
      plan('Create a.txt'),
      {
        match = 'Create a.txt',
        toolCalls = { { name = 'file_write', arguments = { path = 'a.txt', content = 'a\n' } } },
      },
      { match = 'created a.txt', text = 'Wrote a.txt.' },
    }, PRICED .. '\n[limits]\nmaxTokensPerTask = 10')
    h.start(dir)
    local asked = h.capture_selects()

    vim.cmd('Conclave submit Create a.txt')
    h.wait('the token-limit approval', function()
      return #asked == 1
    end)
    assert.truthy(
      asked[1].opts.prompt:match('^Conclave decision %(medium%): Token limit reached: %d+ of 10 tokens$'),
      asked[1].opts.prompt
    )
    assert.truthy(asked[1].float_text, 'the detail was shown in a float')
    assert.truthy(
      asked[1].float_text:match(
        'has used %d+ %([%d,]+ in · [%d,]+ out · %d+ calls? · %$0%.%d%d%d%d%), reaching its limit of 10 tokens'
      ),
      asked[1].float_text
    )
    local titles = vim.tbl_map(function(o)
      return o.title
    end, asked[1].items)
    assert.truthy(titles[1]:match('^Continue %(limit %d+ tokens%)$'), vim.inspect(titles))
    assert.are.equal('Cancel the task', titles[2])
    asked[1].on_choice(asked[1].items[2])
    h.wait('the task cancelled', function()
      return h.only_task().status == 'cancelled'
    end)
  end)
end)
