-- Conclave: cheap to load; everything else is required on first use.
if vim.g.loaded_conclave then
  return
end
vim.g.loaded_conclave = true

vim.api.nvim_create_user_command('Conclave', function(cmd)
  require('conclave').ensure_setup()
  require('conclave.commands').run(cmd)
end, {
  nargs = '*',
  range = true,
  desc = 'Conclave: submit | tasks | agents | whiteboard [id] | approvals | cancel | retry | report | log | checks',
  complete = function(arglead, cmdline)
    return require('conclave.commands').complete(arglead, cmdline)
  end,
})

-- vim.g.conclave set before startup: attach without an explicit setup() call.
if vim.g.conclave ~= nil then
  vim.api.nvim_create_autocmd({ 'BufReadPost', 'BufNewFile' }, {
    once = true,
    callback = function()
      require('conclave').ensure_setup()
    end,
  })
end
