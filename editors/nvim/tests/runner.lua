-- Runs the busted suite inside Neovim: nvim -l tests/runner.lua --no-auto-insulate [busted args] tests
-- Debian's lua-busted (Lua 5.1 modules) is loaded from the system Lua paths.
local plugin_dir =
  vim.fs.dirname(vim.fs.dirname(vim.fs.normalize(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p'))))
for _, dir in ipairs({ '/usr/local/share/lua/5.1', '/usr/share/lua/5.1' }) do
  package.path = ('%s/?.lua;%s/?/init.lua;'):format(dir, dir) .. package.path
end
for _, dir in ipairs({
  '/usr/local/lib/lua/5.1',
  '/usr/lib/x86_64-linux-gnu/lua/5.1',
  '/usr/lib/aarch64-linux-gnu/lua/5.1',
  '/usr/lib/lua/5.1',
}) do
  package.cpath = ('%s/?.so;'):format(dir) .. package.cpath
end
package.path = ('%s/tests/?.lua;%s/lua/?.lua;%s/lua/?/init.lua;'):format(plugin_dir, plugin_dir, plugin_dir)
  .. package.path

vim.opt.runtimepath:prepend(plugin_dir)
vim.opt.swapfile = false
vim.opt.shadafile = 'NONE'
vim.cmd('runtime plugin/conclave.lua')

_G.arg = arg
require('busted.runner')({ standalone = false })
