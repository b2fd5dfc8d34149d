-- A real Neovim on a real terminal, and a picture of its screen: the plugin runs in a TUI
-- Neovim inside tmux, driven over its --listen socket; tmux's copy of the screen (every cell
-- with its colours) is drawn as HTML and photographed by headless Chromium.
local M = {}

local Screen = {}
Screen.__index = Screen

--- The programs a picture needs that this machine lacks (empty when it has them all).
function M.missing_tools()
  local missing = {}
  if vim.fn.executable('tmux') == 0 then
    table.insert(missing, 'tmux')
  end
  if not M.chromium() then
    table.insert(missing, 'chromium')
  end
  return missing
end

function M.chromium()
  for _, candidate in ipairs({ vim.env.CHROMIUM or '', 'chromium', 'chromium-browser' }) do
    if candidate ~= '' and vim.fn.executable(candidate) == 1 then
      return vim.fn.exepath(candidate)
    end
  end
end

local function run(cmd)
  local result = vim.system(cmd, { text = true }):wait(30000)
  assert(result.code == 0, table.concat(cmd, ' ') .. ' failed: ' .. (result.stderr or '') .. (result.stdout or ''))
  return result.stdout
end

local function run_tmux(self, ...)
  return run({ 'tmux', '-L', self.tmux, ... })
end

--- Starts Neovim (this one's binary) at `width`×`height` in `dir`, with `init` (Lua) as its
--- init file, and connects to it.
function M.start(dir, init, width, height)
  local self = setmetatable({}, Screen)
  self.dir = dir
  self.width, self.height = width, height
  self.tmux = 'conclave-screen-' .. vim.uv.os_getpid() .. '-' .. vim.uv.hrtime()
  self.socket = vim.fn.tempname() .. '.sock'
  local init_path = vim.fn.tempname() .. '.lua'
  vim.fn.writefile(vim.split(init, '\n'), init_path)
  local nvim = table.concat({
    vim.fn.shellescape(vim.v.progpath),
    '--clean',
    '--listen',
    vim.fn.shellescape(self.socket),
    '-u',
    vim.fn.shellescape(init_path),
  }, ' ')
  -- A private tmux server (-L) with no user configuration (-f /dev/null); the terminal
  -- type lets Neovim draw in 24-bit colour.
  run_tmux(
    self,
    '-f',
    '/dev/null',
    'new-session',
    '-d',
    '-x',
    tostring(width),
    '-y',
    tostring(height),
    '-c',
    dir,
    '-e',
    'TERM=tmux-256color',
    '-e',
    'COLORTERM=truecolor',
    nvim
  )
  local connected = vim.wait(20000, function()
    local ok, chan = pcall(vim.fn.sockconnect, 'pipe', self.socket, { rpc = true })
    if ok and chan > 0 then
      self.chan = chan
      return true
    end
    return false
  end, 50)
  assert(connected, 'the Neovim in tmux did not open ' .. self.socket)
  -- The socket opens before the init file has run.
  local started = vim.wait(20000, function()
    return self:lua('return vim.v.vim_did_enter') == 1
  end, 50)
  assert(started, 'the Neovim in tmux did not finish starting')
  return self
end

--- Runs Lua in the Neovim on screen and returns its value. A Neovim waiting at a
--- hit-enter prompt answers no request: that fails here, with the screen, instead of hanging.
function Screen:lua(code, ...)
  local text = run_tmux(self, 'capture-pane', '-p', '-t', '0')
  if text:find('Press ENTER or type command to continue', 1, true) then
    error('the Neovim on screen waits at a hit-enter prompt:\n' .. text, 2)
  end
  return vim.rpcrequest(self.chan, 'nvim_exec_lua', code, { ... })
end

--- The screen as tmux holds it: text with the terminal's colour escapes.
function Screen:capture()
  self:lua('vim.cmd.redraw({ bang = true })')
  -- A redraw reaches tmux a moment after Neovim wrote it; two equal captures in a row
  -- mean the screen is settled.
  local last, settled
  vim.wait(5000, function()
    local now = run_tmux(self, 'capture-pane', '-p', '-e', '-t', '0')
    settled = now == last
    last = now
    return settled
  end, 100)
  return last
end

--- The plain text of a capture.
function M.text(ansi)
  return (ansi:gsub('\27%[[%d;:]*m', ''))
end

-- The 16 basic colours in two rows of eight, normal then bright, as terminals list them.
-- stylua: ignore
local BASIC = {
  [0] = '#000000', '#cd3131', '#0dbc79', '#e5e510', '#2472c8', '#bc3fbc', '#11a8cd', '#e5e5e5',
  '#666666', '#f14c4c', '#23d18b', '#f5f543', '#3b8eea', '#d670d6', '#29b8db', '#ffffff',
}

local function xterm256(n)
  if n < 16 then
    return BASIC[n]
  end
  if n < 232 then
    n = n - 16
    local level = { 0, 95, 135, 175, 215, 255 }
    return string.format(
      '#%02x%02x%02x',
      level[math.floor(n / 36) + 1],
      level[math.floor(n / 6) % 6 + 1],
      level[n % 6 + 1]
    )
  end
  local grey = 8 + (n - 232) * 10
  return string.format('#%02x%02x%02x', grey, grey, grey)
end

--- Applies one SGR escape's parameters to `style`.
local function apply_sgr(style, params)
  local codes = {}
  for code in (params == '' and '0' or params):gmatch('[^;:]+') do
    table.insert(codes, tonumber(code) or 0)
  end
  local i = 1
  while i <= #codes do
    local c = codes[i]
    if c == 0 then
      for k in pairs(style) do
        style[k] = nil
      end
    elseif c == 1 then
      style.bold = true
    elseif c == 3 then
      style.italic = true
    elseif c == 4 then
      style.underline = true
    elseif c == 7 then
      style.reverse = true
    elseif c == 22 then
      style.bold = nil
    elseif c == 23 then
      style.italic = nil
    elseif c == 24 then
      style.underline = nil
    elseif c == 27 then
      style.reverse = nil
    elseif c == 38 or c == 48 then
      local key = c == 38 and 'fg' or 'bg'
      if codes[i + 1] == 2 then
        style[key] = string.format('#%02x%02x%02x', codes[i + 2] or 0, codes[i + 3] or 0, codes[i + 4] or 0)
        i = i + 4
      elseif codes[i + 1] == 5 then
        style[key] = xterm256(codes[i + 2] or 0)
        i = i + 2
      end
    elseif c == 39 then
      style.fg = nil
    elseif c == 49 then
      style.bg = nil
    elseif c >= 30 and c <= 37 then
      style.fg = BASIC[c - 30]
    elseif c >= 40 and c <= 47 then
      style.bg = BASIC[c - 40]
    elseif c >= 90 and c <= 97 then
      style.fg = BASIC[c - 90 + 8]
    elseif c >= 100 and c <= 107 then
      style.bg = BASIC[c - 100 + 8]
    end
    i = i + 1
  end
end

local function escape(text)
  return (text:gsub('&', '&amp;'):gsub('<', '&lt;'):gsub('>', '&gt;'))
end

--- A capture as an HTML page: one row a line, `width` cells wide, each run of cells in its
--- colours; `fg` and `bg` are the colours of cells that set none (Neovim's Normal).
function M.html(ansi, width, fg, bg)
  local rows = {}
  local style = {}
  for line in (ansi .. '\n'):gmatch('(.-)\n') do
    local spans, used = {}, 0
    local pos = 1
    while pos <= #line do
      local s, e, params = line:find('\27%[([%d;:]*)m', pos)
      local chunk = line:sub(pos, (s or #line + 1) - 1)
      if chunk ~= '' then
        local cfg, cbg = style.fg or fg, style.bg or bg
        if style.reverse then
          cfg, cbg = cbg, cfg
        end
        local css = string.format('color:%s;background:%s', cfg, cbg)
        if style.bold then
          css = css .. ';font-weight:bold'
        end
        if style.italic then
          css = css .. ';font-style:italic'
        end
        if style.underline then
          css = css .. ';text-decoration:underline'
        end
        table.insert(spans, string.format('<span style="%s">%s</span>', css, escape(chunk)))
        used = used + vim.fn.strdisplaywidth(chunk)
      end
      if not s then
        break
      end
      apply_sgr(style, params)
      pos = e + 1
    end
    -- tmux leaves out trailing blank cells; they keep the colour the line ended with.
    if used < width then
      local cbg = style.bg or bg
      table.insert(spans, string.format('<span style="background:%s">%s</span>', cbg, string.rep(' ', width - used)))
    end
    table.insert(rows, '<div>' .. table.concat(spans) .. '</div>')
  end
  return table.concat({
    '<!doctype html><meta charset="utf-8"><style>',
    string.format('body{margin:0;background:%s}', bg),
    'div{font:15px/19px "DejaVu Sans Mono",monospace;white-space:pre;height:19px}',
    '</style><body>',
    table.concat(rows, '\n'),
    '</body>',
  })
end

--- Photographs `html` with headless Chromium into `png` (`width`×`height` pixels).
function M.photograph(html, png, width, height)
  local page = vim.fn.tempname() .. '.html'
  vim.fn.writefile(vim.split(html, '\n'), page)
  local profile = vim.fn.tempname()
  run({
    M.chromium(),
    '--headless',
    '--no-sandbox',
    '--disable-gpu',
    '--no-first-run',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
    '--hide-scrollbars',
    '--user-data-dir=' .. profile,
    string.format('--window-size=%d,%d', width, height),
    '--screenshot=' .. png,
    'file://' .. page,
  })
  vim.fn.delete(profile, 'rf')
  vim.fn.delete(page)
end

--- Quits the Neovim on screen (its server with it) and the tmux server.
function Screen:stop()
  if self.chan then
    pcall(vim.rpcnotify, self.chan, 'nvim_command', 'qa!')
    pcall(vim.fn.chanclose, self.chan)
    self.chan = nil
  end
  vim.system({ 'tmux', '-L', self.tmux, 'kill-server' }):wait(10000)
end

return M
