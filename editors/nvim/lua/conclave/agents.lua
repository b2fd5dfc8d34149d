---@mod conclave.agents The team, live
local client_mod = require('conclave.client')
local ui = require('conclave.ui')

local M = {}

--- client id -> agentId -> AgentInfo
M.agents = {}

local buffers = {} -- bufnr -> client_id
local refetch_pending = {}
--- bufnr -> line number -> agentId (in Lua: a b: variable would turn holes into vim.NIL)
local line_agents = {}
--- client id -> true while a metrics refresh is scheduled
local metrics_pending = {}

--- How long after an agent changes state its metrics are fetched again (one fetch per burst).
M.metrics_delay_ms = 300

local ICON = {
  initializing = '…',
  idle = '○',
  working = '●',
  waiting_approval = '?',
  blocked = '■',
  failed = '✖',
  shutting_down = '↓',
  terminated = '×',
}

local LAYER_ORDER = { top = 1, mid = 2, bottom = 3 }

local function lines_for(client_id)
  local agents = vim.tbl_values(M.agents[client_id] or {})
  if #agents == 0 then
    return { '(no agents reported yet)' }
  end
  table.sort(agents, function(a, b)
    local la, lb = LAYER_ORDER[a.layer] or 9, LAYER_ORDER[b.layer] or 9
    if la ~= lb then
      return la < lb
    end
    return (a.name or a.agentId) < (b.name or b.agentId)
  end)
  local lines = { "R refresh  <CR> open the agent's whiteboard" }
  local map = {}
  for _, a in ipairs(agents) do
    local m = a.metrics or {}
    table.insert(
      lines,
      ('%s %-6s %-20s %-16s %s  done %d  failed %d  score %.2f'):format(
        ICON[a.status] or '?',
        a.layer or '?',
        a.name or a.agentId,
        a.status or '?',
        a.role or '',
        m.tasksCompleted or 0,
        m.tasksFailed or 0,
        m.performanceScore or 0
      )
    )
    map[#lines] = a.agentId
  end
  return lines, map
end

local function render_all()
  for bufnr, client_id in pairs(buffers) do
    if vim.api.nvim_buf_is_valid(bufnr) then
      local lines, map = lines_for(client_id)
      ui.set_lines(bufnr, lines)
      line_agents[bufnr] = map or {}
    else
      buffers[bufnr] = nil
    end
  end
end

--- Fetch the team with conclave/listAgents.
function M.refresh(client, done)
  client_mod.request(client, 'conclave/listAgents', {}, function(err, result)
    refetch_pending[client.id] = nil
    if err then
      client_mod.report_error('conclave/listAgents', err)
    else
      local by_id = {}
      for _, a in ipairs(result.agents or {}) do
        by_id[a.agentId] = a
      end
      M.agents[client.id] = by_id
      render_all()
      require('conclave.tasks').render_all() -- assignees by name
    end
    if done then
      done(err, result)
    end
  end)
end

--- `conclave/agentStatus`
function M.on_status(client_id, params)
  local agents = M.agents[client_id]
  local agent = agents and agents[params.agentId]
  if agent then
    agent.status = params.to
    render_all()
    -- A state change is when tasks finish and scores move: fetch the metrics again while
    -- the list is shown (conclave/agentStatus carries the state only).
    if next(buffers) ~= nil and not metrics_pending[client_id] then
      metrics_pending[client_id] = true
      vim.defer_fn(function()
        metrics_pending[client_id] = nil
        local client = client_mod.get_by_id(client_id)
        if client and next(buffers) ~= nil then
          M.refresh(client)
        end
      end, M.metrics_delay_ms)
    end
  elseif next(buffers) ~= nil and not refetch_pending[client_id] then
    -- a new agent: fetch the team again (once per burst)
    local client = client_mod.get_by_id(client_id)
    if client then
      refetch_pending[client_id] = true
      M.refresh(client)
    end
  end
end

--- Open the agents list.
function M.open(client)
  local name = ui.project_name('conclave://agents', client)
  local bufnr, created = ui.scratch(name, client.root_dir, 'conclave-agents')
  buffers[bufnr] = client.id
  vim.b[bufnr].conclave_nowrap = true
  if created then
    vim.keymap.set('n', 'R', function()
      M.refresh(client)
    end, { buffer = bufnr, desc = 'Conclave: refresh agents', nowait = true })
    vim.keymap.set('n', '<CR>', function()
      local id = (line_agents[bufnr] or {})[vim.api.nvim_win_get_cursor(0)[1]]
      if type(id) == 'string' then
        require('conclave.whiteboard').open(client, 'agent:' .. id)
      else
        vim.notify('Conclave: no agent on this line', vim.log.levels.INFO)
      end
    end, { buffer = bufnr, desc = "Conclave: the agent's whiteboard", nowait = true })
    vim.api.nvim_create_autocmd('BufWipeout', {
      buffer = bufnr,
      callback = function()
        buffers[bufnr] = nil
        line_agents[bufnr] = nil
      end,
    })
  end
  render_all()
  ui.show(bufnr)
  M.refresh(client)
  return bufnr
end

--- The name of an agent of a client, or nil.
function M.name(client_id, agent_id)
  local agents = M.agents[client_id]
  local agent = agents and agents[agent_id]
  return agent and agent.name or nil
end

--- `text` with every agent id the client knows replaced by the agent's name.
function M.humanize(client_id, text)
  for agent_id, agent in pairs(M.agents[client_id] or {}) do
    if agent.name and text:find(agent_id, 1, true) then
      text = text:gsub(vim.pesc(agent_id), (agent.name:gsub('%%', '%%%%')))
    end
  end
  return text
end

--- A whiteboard id as a person reads it: `agent:<uuid>` becomes `agent:<name>`.
function M.board_label(client_id, id)
  local agent_id = type(id) == 'string' and id:match('^agent:(.+)$')
  if agent_id then
    local name = M.name(client_id, agent_id)
    return 'agent:' .. (name or require('conclave.tasks').short_id(agent_id))
  end
  return id
end

return M
