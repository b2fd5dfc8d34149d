---@mod conclave.usage Tokens and cost as people read them: "12.3k tokens · $0.0042"
--- (the VS Code extension formats the same way: editors/vscode/src/model/usage.ts).
local M = {}

local function num(v)
  return type(v) == 'number' and v or 0
end

--- 812, 1.2k, 12.3k, 123k, 1.5M: three significant digits at most, no trailing ".0".
---@param tokens number
---@return string
function M.format_tokens(tokens)
  local n = math.max(0, math.floor(num(tokens) + 0.5))
  if n < 1000 then
    return tostring(n)
  end
  local value, unit = n / 1000, 'k'
  if n >= 999500 then
    value, unit = n / 1000000, 'M'
  end
  local text = value < 100 and ('%.1f'):format(value) or ('%.0f'):format(value)
  return (text:gsub('%.0$', '')) .. unit
end

--- $0.0042 under a dollar (a task's cost is often a fraction of a cent), $12.34 above.
---@param usd number
---@return string
function M.format_cost(usd)
  return usd < 1 and ('$%.4f'):format(usd) or ('$%.2f'):format(usd)
end

--- The cost of a usage, or nil when the model has no price (`costUsd` null).
local function cost_of(usage)
  return type(usage.costUsd) == 'number' and usage.costUsd or nil
end

function M.total_tokens(usage)
  return num(usage.inputTokens) + num(usage.outputTokens)
end

--- "12.3k tokens · $0.0042", the cost only when the model has a price.
---@param usage table TokenUsage
---@return string
function M.label(usage)
  local text = M.format_tokens(M.total_tokens(usage)) .. ' tokens'
  local cost = cost_of(usage)
  return cost and (text .. ' · ' .. M.format_cost(cost)) or text
end

local function grouped(n)
  local text = tostring(math.floor(num(n) + 0.5))
  local out = text:reverse():gsub('(%d%d%d)', '%1,'):reverse()
  return (out:gsub('^,', ''))
end

--- The whole figure: exact counts, calls, estimates, and why there is no cost.
function M.detail(usage)
  local calls = num(usage.calls)
  local text = ('%s in · %s out · %d call%s'):format(
    grouped(usage.inputTokens),
    grouped(usage.outputTokens),
    calls,
    calls == 1 and '' or 's'
  )
  if num(usage.estimatedCalls) > 0 then
    text = text .. (' (%d estimated: the provider reported no usage)'):format(usage.estimatedCalls)
  end
  local cost = cost_of(usage)
  return text
    .. ' · '
    .. (cost and M.format_cost(cost) or 'cost unknown: the model has no [pricing] entry in conclave.toml')
end

--- The sum of several usages (nil for none); a cost only where one is known.
function M.add(usages)
  if #usages == 0 then
    return nil
  end
  local sum = { inputTokens = 0, outputTokens = 0, calls = 0, estimatedCalls = 0, costUsd = vim.NIL }
  for _, u in ipairs(usages) do
    sum.inputTokens = sum.inputTokens + num(u.inputTokens)
    sum.outputTokens = sum.outputTokens + num(u.outputTokens)
    sum.calls = sum.calls + num(u.calls)
    sum.estimatedCalls = sum.estimatedCalls + num(u.estimatedCalls)
    local cost = cost_of(u)
    if cost then
      sum.costUsd = (cost_of(sum) or 0) + cost
    end
  end
  return sum
end

return M
