---@mod conclave.status Statusline component and "being generated" virtual text
local M = {}

M.ns = vim.api.nvim_create_namespace('conclave_generating')

local SUBTASK_DONE = { completed = true, failed = true, cancelled = true }

--- The short status string: `idle`, `N running`, `↻ retry 2/3`, `⚠ escalated`,
--- `✖ failed`; while tasks run, what they spent so far (`· 12.3k tokens · $0.0042`); then a
--- provider-wide notice while one holds (`· ⏸ waiting for …`).
---@return string
function M.compute()
  local base = M.compute_tasks()
  local spent = M.compute_usage()
  if spent then
    base = base .. ' · ' .. spent
  end
  local notice = require('conclave.tasks').provider_notice
  if notice and (not notice.expires or notice.expires > vim.uv.now()) then
    local text = notice.message
    if vim.fn.strchars(text) > 60 then
      text = vim.fn.strcharpart(text, 0, 59) .. '…'
    end
    return base .. ' · ⏸ ' .. text
  end
  return base
end

--- The task part of the status string.
---@return string
function M.compute_tasks()
  local tasks = require('conclave.tasks')
  local active, escalated, retry = 0, false, nil
  local latest_finished
  for _, entry in pairs(tasks.tasks) do
    local t = entry.task
    if tasks.ACTIVE[t.status] then
      active = active + 1
      if t.status == 'escalated' then
        escalated = true
      end
      local r = t.recovery
      if r and r.action == 'retry' then
        local still_trying = t.status == 'recovering'
        for _, s in ipairs(t.subtasks or {}) do
          if s.subtaskId == r.subtaskId and not SUBTASK_DONE[s.status] then
            still_trying = true
          end
        end
        if still_trying then
          retry = r
        end
      end
    elseif not latest_finished or entry.seq > latest_finished.seq then
      latest_finished = entry
    end
  end
  if escalated then
    return '⚠ escalated'
  end
  if retry then
    return ('↻ retry %d/%d'):format(retry.attempt or 0, retry.maxAttempts or 0)
  end
  if active > 0 then
    return ('%d running'):format(active)
  end
  if latest_finished and latest_finished.task.status == 'failed' then
    return '✖ failed'
  end
  return 'idle'
end

--- What the unfinished tasks spent so far ("12.3k tokens · $0.0042"), or nil.
---@return string|nil
function M.compute_usage()
  local tasks = require('conclave.tasks')
  local usages = {}
  for _, entry in pairs(tasks.tasks) do
    local t = entry.task
    if tasks.ACTIVE[t.status] and type(t.usageTotal) == 'table' then
      table.insert(usages, t.usageTotal)
    end
  end
  local sum = require('conclave.usage').add(usages)
  return sum and require('conclave.usage').label(sum) or nil
end

M.current = 'idle'

--- Recompute after a notification; redraw statuslines when it changed.
function M.refresh()
  local now = M.compute()
  if now ~= M.current then
    M.current = now
    vim.api.nvim_exec_autocmds('User', { pattern = 'ConclaveStatus', modeline = false, data = { status = now } })
    pcall(vim.cmd, 'redrawstatus!')
  end
  M.refresh_marks()
end

--- Files being generated: normalized path -> { description, status }.
function M.generating()
  local out = {}
  for _, entry in pairs(require('conclave.tasks').tasks) do
    for _, s in ipairs(entry.task.subtasks or {}) do
      if s.status == 'running' or s.status == 'recovering' then
        for _, uri in ipairs(s.files or {}) do
          local ok, fname = pcall(vim.uri_to_fname, uri)
          if ok then
            out[vim.fs.normalize(fname)] = { description = s.description, status = s.status }
          end
        end
      end
    end
  end
  return out
end

--- Put or clear the virtual text on every loaded file buffer.
function M.refresh_marks()
  local opts = require('conclave.config').options
  local files = opts.virtual_text == false and {} or M.generating()
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(bufnr) and vim.bo[bufnr].buftype == '' then
      local name = vim.api.nvim_buf_get_name(bufnr)
      local info = name ~= '' and files[vim.fs.normalize(name)]
      if info then
        local text = info.status == 'recovering' and '↻ Conclave is recovering this file'
          or '⟳ Conclave is generating this file'
        vim.api.nvim_buf_set_extmark(bufnr, M.ns, 0, 0, {
          id = 1,
          virt_text = { { ('%s: %s'):format(text, info.description or ''), 'DiagnosticVirtualTextInfo' } },
          virt_text_pos = 'eol',
          hl_mode = 'combine',
        })
      else
        vim.api.nvim_buf_clear_namespace(bufnr, M.ns, 0, -1)
      end
    end
  end
end

return M
