---@mod conclave.health :checkhealth conclave
local M = {}

local health = vim.health

--- The llm provider named in a conclave.toml, if any.
---@param path string
---@return string|nil
function M.toml_provider(path)
  local fd = io.open(path, 'r')
  if not fd then
    return nil
  end
  local text = fd:read('*a')
  fd:close()
  local section
  for line in (text .. '\n'):gmatch('(.-)\r?\n') do
    local stripped = vim.trim((line:gsub('%s#.*$', '')))
    local header = stripped:match('^%[%s*([^%]]-)%s*%]$')
    if header then
      section = header
    else
      local key, value = stripped:match('^([%w_."]+)%s*=%s*(.+)$')
      if key then
        key = key:gsub('"', '')
        if section == 'llm' and key == 'provider' then
          return value:match('^["\']([^"\']*)["\']')
        elseif section == nil and key == 'llm.provider' then
          return value:match('^["\']([^"\']*)["\']')
        elseif section == nil and key == 'llm' then
          local p = value:match('provider%s*=%s*["\']([^"\']*)["\']')
          if p then
            return p
          end
        end
      end
    end
  end
end

local function check_binary()
  local config = require('conclave.config')
  local bin = config.binary()
  if vim.fn.executable(bin) ~= 1 then
    health.error(("server binary '%s' not found"):format(bin), {
      'Build it (cargo build) or install it, then set `cmd` in setup() or $CONCLAVE_BIN',
    })
    return false
  end
  local path = vim.fn.exepath(bin)
  local ok, res = pcall(function()
    return vim.system({ path, '--version' }, { text = true }):wait(5000)
  end)
  if not ok or res.code ~= 0 then
    health.error(('`%s --version` failed: %s'):format(path, ok and (res.stderr or '') or tostring(res)))
    return false
  end
  health.ok(('binary found: %s (%s)'):format(path, vim.trim(res.stdout or '')))
  return true
end

local function check_clients()
  local client_mod = require('conclave.client')
  local clients = client_mod.clients()
  if #clients == 0 then
    health.warn('no Conclave server is running', {
      'Open a file of a project with conclave.toml or .git, or run :Conclave tasks',
    })
    return clients
  end
  for _, client in ipairs(clients) do
    local info = client.server_info or {}
    health.ok(
      ('server running for %s (client id %d, %s %s)'):format(
        client.root_dir or '?',
        client.id,
        info.name or 'conclave',
        info.version or '?'
      )
    )
    local proto = vim.tbl_get(client.server_capabilities or {}, 'experimental', 'conclave', 'protocolVersion')
    if proto == 1 then
      health.ok('protocol version 1 OK')
    elseif proto == nil and not client_mod.is_ready(client) then
      health.info('the server is still starting; the protocol version is not known yet')
    else
      health.error(
        ('protocol version mismatch: the server speaks %s, the plugin speaks 1'):format(vim.inspect(proto)),
        {
          'Update the plugin and the conclave binary together',
        }
      )
    end
  end
  return clients
end

local function check_model(clients)
  local config = require('conclave.config')
  local provider = vim.tbl_get(config.options, 'llm', 'provider')
  if provider then
    health.ok(('model configured in the options: llm.provider = "%s"'):format(provider))
    return
  end
  local roots = {}
  for _, client in ipairs(clients) do
    table.insert(roots, client.root_dir)
  end
  if #roots == 0 then
    local root = require('conclave.client').current_root(0)
    table.insert(roots, root)
  end
  local found = false
  for _, root in ipairs(roots) do
    local p = M.toml_provider(vim.fs.joinpath(root, 'conclave.toml'))
    if p then
      found = true
      health.ok(('model configured in %s: llm.provider = "%s"'):format(vim.fs.joinpath(root, 'conclave.toml'), p))
    end
  end
  if found then
    return
  end
  if (vim.env.ANTHROPIC_API_KEY or '') ~= '' or (vim.env.OPENAI_API_KEY or '') ~= '' then
    health.ok('no llm provider configured; the server will use the API key found in the environment')
    return
  end
  health.warn('no model configured', {
    'Set `llm = { provider = "anthropic" | "openai", model = ... }` in setup() or [llm] in conclave.toml',
    'or export ANTHROPIC_API_KEY / OPENAI_API_KEY, or point llm.baseUrl at a local OpenAI-compatible server (Ollama)',
  })
end

--- Whether `root/.conclave` is ignored by git: true, false, or nil (not a git work tree).
function M.conclave_dir_ignored(root)
  if vim.fn.executable('git') ~= 1 then
    return nil
  end
  local inside = vim.system({ 'git', '-C', root, 'rev-parse', '--is-inside-work-tree' }, { text = true }):wait(5000)
  if inside.code ~= 0 then
    return nil
  end
  local ignored = vim.system({ 'git', '-C', root, 'check-ignore', '-q', '.conclave/' }):wait(5000)
  return ignored.code == 0
end

--- The server keeps its state in `.conclave/` at the project root (the task store, the
--- lock, session reports): say so, and whether git would pick it up.
local function check_state_dir(clients)
  local roots = {}
  for _, client in ipairs(clients) do
    table.insert(roots, client.root_dir)
  end
  if #roots == 0 then
    table.insert(roots, require('conclave.client').current_root(0))
  end
  for _, root in ipairs(roots) do
    local dir = vim.fs.joinpath(root, '.conclave')
    local exists = vim.uv.fs_stat(dir) ~= nil
    local ignored = M.conclave_dir_ignored(root)
    local what = ('%s %s'):format(
      dir,
      exists and "holds the server's state" or "will hold the server's state once it runs"
    )
    if ignored == false then
      health.warn(what .. ', and git does not ignore it', {
        ('Add a line `.conclave/` to %s'):format(vim.fs.joinpath(root, '.gitignore')),
      })
    else
      health.info(what .. ' (task store, lock, error reports)' .. (ignored and '; git ignores it' or ''))
    end
  end
end

function M.check()
  health.start('conclave: server binary')
  check_binary()
  health.start('conclave: server')
  local clients = check_clients()
  health.start('conclave: model')
  check_model(clients)
  health.start('conclave: state directory')
  check_state_dir(clients)
end

return M
