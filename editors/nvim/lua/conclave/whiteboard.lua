---@mod conclave.whiteboard Live whiteboards in read-only buffers
local client_mod = require('conclave.client')
local ui = require('conclave.ui')

local M = {}

--- client id -> board id -> bufnr
M.buffers = {}

local function buffer_of(client_id, id)
  local boards = M.buffers[client_id]
  local bufnr = boards and boards[id]
  if bufnr and vim.api.nvim_buf_is_valid(bufnr) then
    return bufnr
  end
end

local function apply(bufnr, board)
  local version = vim.b[bufnr].conclave_whiteboard_version or -1
  if (board.version or 0) < version then
    return -- never go back to an older version
  end
  ui.set_lines(bufnr, board.content or '')
  vim.b[bufnr].conclave_whiteboard_version = board.version
end

--- `conclave/whiteboardChanged`
function M.on_changed(client_id, params)
  local bufnr = buffer_of(client_id, params.id)
  if bufnr then
    apply(bufnr, params)
  end
end

--- Open (or focus) whiteboard `id` of a client, subscribed for live updates.
---@param client table
---@param id string
function M.open(client, id)
  local existing = buffer_of(client.id, id)
  if existing then
    ui.show(existing, 'botright vsplit')
    return existing
  end
  local label = require('conclave.agents').board_label(client.id, id)
  local name = ui.project_name('conclave://whiteboard/' .. label, client)
  local bufnr = ui.scratch(name, client.root_dir, 'markdown')
  vim.b[bufnr].conclave_whiteboard = id
  vim.b[bufnr].conclave_whiteboard_version = -1
  M.buffers[client.id] = M.buffers[client.id] or {}
  M.buffers[client.id][id] = bufnr
  ui.set_lines(bufnr, { ('(loading whiteboard %s…)'):format(label) })
  local client_id = client.id
  vim.api.nvim_create_autocmd('BufWipeout', {
    buffer = bufnr,
    once = true,
    callback = function()
      if M.buffers[client_id] then
        M.buffers[client_id][id] = nil
      end
      local c = client_mod.get_by_id(client_id)
      if c then
        client_mod.request(c, 'conclave/unsubscribeWhiteboard', { id = id }, function() end)
      end
    end,
  })
  client_mod.request(client, 'conclave/subscribeWhiteboard', { id = id }, function(err, board)
    if not vim.api.nvim_buf_is_valid(bufnr) then
      return
    end
    if err then
      ui.set_lines(bufnr, { ('Whiteboard %s: %s'):format(label, err.message or 'error') })
      client_mod.report_error('conclave/subscribeWhiteboard', err)
      return
    end
    apply(bufnr, board)
  end)
  ui.show(bufnr, 'botright vsplit')
  return bufnr
end

--- Ask which whiteboard to open (conclave/listWhiteboards), then open it.
function M.pick(client)
  client_mod.request(client, 'conclave/listWhiteboards', {}, function(err, result)
    if err then
      return client_mod.report_error('conclave/listWhiteboards', err)
    end
    local boards = result.whiteboards or {}
    M.known = vim.tbl_map(function(b)
      return b.id
    end, boards)
    if #boards == 0 then
      return vim.notify('Conclave: no whiteboards yet', vim.log.levels.INFO)
    end
    local agents = require('conclave.agents')
    local function choose()
      vim.ui.select(boards, {
        prompt = 'Conclave whiteboard',
        format_item = function(b)
          return ('%s (v%d)'):format(agents.board_label(client.id, b.id), b.version or 0)
        end,
      }, function(choice)
        if choice then
          M.open(client, choice.id)
        end
      end)
    end
    -- Agents' boards are shown by name: know the team first.
    if agents.agents[client.id] == nil then
      agents.refresh(client, choose)
    else
      choose()
    end
  end)
end

--- Whiteboard ids seen so far (for completion).
M.known = { 'global', 'layer:top', 'layer:mid', 'layer:bottom' }

--- Ids for completion: the fixed boards, the ones listed so far, every known agent's.
function M.ids()
  local seen, out = {}, {}
  local function add(id)
    if not seen[id] then
      seen[id] = true
      table.insert(out, id)
    end
  end
  for _, id in ipairs({ 'global', 'layer:top', 'layer:mid', 'layer:bottom' }) do
    add(id)
  end
  for _, id in ipairs(M.known) do
    add(id)
  end
  for _, agents in pairs(require('conclave.agents').agents) do
    for agent_id in pairs(agents) do
      add('agent:' .. agent_id)
    end
  end
  return out
end

return M
