-- luacheck (Debian's lua-check), run by scripts/test.sh on lua/, plugin/ and tests/.
-- Neovim runs the plugin on LuaJIT: Lua 5.1 with LuaJIT's extensions.
std = 'luajit'
-- Neovim's API; setting its fields (vim.g, vim.opt, vim.ui.select) is how it is used.
globals = { 'vim' }
-- StyLua (stylua.toml) owns the layout and leaves a long string literal whole.
max_line_length = false
-- The specs run under busted: describe, it, before_each, assert.are…
files['tests/*_spec.lua'] = { std = '+busted' }
