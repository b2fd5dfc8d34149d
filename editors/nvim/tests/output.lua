-- busted output handler: the usual utfTerminal report, then one plain summary line,
-- `N passed, N failed`, that CI logs and scripts can read (errors count as failures).
return function(options)
  local busted = require('busted')
  local handler = require('busted.outputHandlers.utfTerminal')(options)

  busted.subscribe({ 'suite', 'end' }, function()
    local failed = handler.failuresCount + handler.errorsCount
    io.write(('\n%d passed, %d failed\n'):format(handler.successesCount, failed))
    io.flush()
    return nil, true
  end)

  return handler
end
