/**
 * The Lua scripts of the Redis store. A script runs atomically on one Redis; in a cluster every
 * key a script touches must live in one slot, which the key layout (keys.ts) guarantees for each
 * script used in cluster mode. Errors start with a vigil error code so the client can map them.
 */
import { STATE_PURGE_CHUNK } from '../state.ts';

/** Groups per variadic command in the commit script: 2 × this values per HSET, within Lua's unpack limit (8,000). */
const GROUP_CHUNK = 1000;

/** Stream ids are `<ms>-<seq>`; they are compared as numbers (ms fits a double exactly). */
const STREAM_IDS = `
local function idparts(id)
  local a, b = string.match(id, '^(%d+)%-(%d+)$')
  return a, tonumber(a), tonumber(b)
end
local function idgt(x, y)
  if not y then return true end
  local _, xa, xb = idparts(x)
  local _, ya, yb = idparts(y)
  return xa > ya or (xa == ya and xb > yb)
end
local function nextid(id)
  local a, _, b = idparts(id)
  return a .. '-' .. (b + 1)
end
`;

/**
 * Processor state (src/store/state.ts) in the `{state}` slot. Per namespace: a hash key →
 * `<version>|<expires at or empty>|<JSON>`, a sorted set of keys by write sequence (eviction order,
 * newest last) and a sorted set of expiring keys by expiry. The kv-meta hash holds the write
 * sequence, the timer sequence and the eviction counts (`evicted:<namespace>`).
 *
 * A state section of ARGV: nNs, then per namespace: name, max entries, nW, then nW × (key,
 * version or '' (unconditional), expires at or '', JSON or '' (delete)). Its KEYS: per namespace
 * (hash, order, expiry). `state_check` returns an error text or nil and writes nothing;
 * `state_apply` writes, purges expired entries in bounded chunks and evicts beyond the bound.
 */
const STATE = `
local function entry_version(raw, now)
  if not raw then return 0 end
  local v, x = string.match(raw, '^(%d+)|(%d*)|')
  if x ~= '' and tonumber(x) <= now then return 0 end
  return tonumber(v)
end
local function state_check(kb, a, now)
  local nNs = tonumber(ARGV[a])
  a = a + 1
  for i = 1, nNs do
    local name, nW = ARGV[a], tonumber(ARGV[a + 2])
    local hash = KEYS[kb + 3 * (i - 1)]
    local pending = {}
    a = a + 3
    for j = 1, nW do
      local key, ver, json = ARGV[a], ARGV[a + 1], ARGV[a + 3]
      local cur = pending[key]
      if cur == nil then cur = entry_version(redis.call('HGET', hash, key), now) end
      if ver ~= '' and tonumber(ver) ~= cur + 1 then
        return 'VIGIL_STORE_CONFLICT state ' .. name .. '/' .. key .. ' changed concurrently (version ' .. cur .. ', expected ' .. (tonumber(ver) - 1) .. ')'
      end
      if json == '' then pending[key] = 0 else pending[key] = cur + 1 end
      a = a + 4
    end
  end
  return nil
end
local function state_drop(hash, order, exp, keys)
  for i = 1, #keys, 500 do
    local part = {unpack(keys, i, math.min(i + 499, #keys))}
    redis.call('HDEL', hash, unpack(part))
    redis.call('ZREM', order, unpack(part))
    redis.call('ZREM', exp, unpack(part))
  end
  return #keys
end
local function state_apply(kNs, kMeta, kb, a, now)
  local nNs = tonumber(ARGV[a])
  a = a + 1
  for i = 1, nNs do
    local name, max, nW = ARGV[a], tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2])
    local k = kb + 3 * (i - 1)
    local hash, order, exp = KEYS[k], KEYS[k + 1], KEYS[k + 2]
    a = a + 3
    for j = 1, nW do
      local key, x, json = ARGV[a], ARGV[a + 2], ARGV[a + 3]
      a = a + 4
      if json == '' then
        redis.call('HDEL', hash, key)
        redis.call('ZREM', order, key)
        redis.call('ZREM', exp, key)
      else
        local cur = entry_version(redis.call('HGET', hash, key), now)
        redis.call('HSET', hash, key, (cur + 1) .. '|' .. x .. '|' .. json)
        redis.call('ZADD', order, redis.call('HINCRBY', kMeta, 'seq', 1), key)
        if x ~= '' then redis.call('ZADD', exp, x, key) else redis.call('ZREM', exp, key) end
      end
    end
    state_drop(hash, order, exp, redis.call('ZRANGEBYSCORE', exp, '-inf', now, 'LIMIT', 0, 2 * nW + ${STATE_PURGE_CHUNK}))
    local n = redis.call('HLEN', hash)
    if n > max then
      n = n - state_drop(hash, order, exp, redis.call('ZRANGEBYSCORE', exp, '-inf', now, 'LIMIT', 0, n - max))
      if n > max then
        local evicted = state_drop(hash, order, exp, redis.call('ZRANGE', order, 0, n - max - 1))
        redis.call('HINCRBY', kMeta, 'evicted:' .. name, evicted)
      end
    end
    redis.call('SADD', kNs, name)
  end
end
`;

/**
 * Durable timers of a pipeline in the `{state}` slot: a hash id → `<version>|<due>|<JSON body>`
 * and a sorted set of ids by due time; versions come from the kv-meta hash's `timer-seq`, so a
 * timer set again never reuses a version. A timer section of ARGV: nClear, nSet, nClear × (id,
 * version or ''), nSet × (id, due, JSON body). Clears apply before sets.
 */
const TIMERS = `
local function timers_check(kt, a, max)
  local nC, nS = tonumber(ARGV[a]), tonumber(ARGV[a + 1])
  a = a + 2
  local cleared = {}
  for i = 1, nC do
    local id, ver = ARGV[a], ARGV[a + 1]
    a = a + 2
    local raw = redis.call('HGET', kt, id)
    if not raw then
      return 'VIGIL_STORE_CONFLICT timer "' .. id .. '" is no longer pending (fired or changed by another writer)'
    end
    local stored = string.match(raw, '^(%d+)|')
    if ver ~= '' and stored ~= ver then
      return 'VIGIL_STORE_CONFLICT timer "' .. id .. '" is at version ' .. stored .. ', not ' .. ver .. ' (fired or changed by another writer)'
    end
    cleared[id] = true
  end
  if nS > 0 then
    local added = 0
    for i = 1, nS do
      local id = ARGV[a]
      a = a + 3
      if cleared[id] or redis.call('HEXISTS', kt, id) == 0 then added = added + 1 end
    end
    local pending = redis.call('HLEN', kt) - nC + added
    if pending > max then
      return 'VIGIL_STATE_FULL the pipeline would hold ' .. pending .. ' pending timers, over the bound of ' .. max .. '; the page is retried once timers have fired'
    end
  end
  return nil
end
local function timers_apply(kt, kd, kMeta, a)
  local nC, nS = tonumber(ARGV[a]), tonumber(ARGV[a + 1])
  a = a + 2
  for i = 1, nC do
    redis.call('HDEL', kt, ARGV[a])
    redis.call('ZREM', kd, ARGV[a])
    a = a + 2
  end
  for i = 1, nS do
    local id, due = ARGV[a], ARGV[a + 1]
    local v = redis.call('HINCRBY', kMeta, 'timer-seq', 1)
    redis.call('HSET', kt, id, v .. '|' .. due .. '|' .. ARGV[a + 2])
    redis.call('ZADD', kd, due, id)
    a = a + 3
  end
end
`;

/**
 * Appends one partition's events, dropping records (time and event id) seen within the dedupe window. The seen-set
 * and the log share the partition's slot, so "seen" and "appended" can never disagree.
 */
const APPEND_PART = `
local function append_part(log, cursor, seen, now, window, a, n)
  redis.call('ZREMRANGEBYSCORE', seen, '-inf', now)
  local added, dups = 0, 0
  for j = 1, n do
    local id, ev = ARGV[a], ARGV[a + 1]
    a = a + 2
    -- id is '<time>:<event id>'; an earlier vigil added the event id alone (until it expires).
    if redis.call('ZSCORE', seen, id) or redis.call('ZSCORE', seen, string.sub(id, (string.find(id, ':', 1, true) or 0) + 1)) then
      dups = dups + 1
    else
      redis.call('ZADD', seen, now + window, id)
      redis.call('XADD', log, '*', 'e', ev)
      added = added + 1
    end
  end
  if added > 0 then
    -- A drained partition's keys were set to expire; new entries keep them.
    redis.call('PERSIST', log)
    redis.call('PERSIST', cursor)
  end
  redis.call('PEXPIRE', seen, window)
  return added, dups, a
end
`;

/** Moves the partition cursor forward (never back) and trims what it passed; returns the backlog. */
const ADVANCE_PART = `
local function advance_part(log, cursor, cur, idle)
  local stored = redis.call('GET', cursor)
  if idgt(cur, stored) then
    redis.call('SET', cursor, cur)
    redis.call('XTRIM', log, 'MINID', nextid(cur))
  end
  local len = redis.call('XLEN', log)
  if len == 0 then
    -- Drained: forget the partition after a quiet period instead of keeping every session forever.
    redis.call('PEXPIRE', log, idle)
    redis.call('PEXPIRE', cursor, idle)
  end
  return len
end
`;

/**
 * Single node: the whole append, with a receiver's state writes, in one script. KEYS: partition
 * registry, pipelines set, state namespaces set, kv-meta, then (log, cursor, seen) per partition,
 * then the state section's keys. ARGV: pipeline, now, window, partition count, index of the state
 * section in ARGV, index of its first key, then per partition: name, n, n × (event id, event
 * JSON), then the state section. Returns {appended, duplicates}; a refused state write appends
 * nothing.
 */
export const APPEND_ALL = `${APPEND_PART}${STATE}
local now, window = tonumber(ARGV[2]), tonumber(ARGV[3])
local stateAt, stateKeys = tonumber(ARGV[5]), tonumber(ARGV[6])
local err = state_check(stateKeys, stateAt, now)
if err then return redis.error_reply(err) end
redis.call('SADD', KEYS[2], ARGV[1])
local a, appended, duplicates = 7, 0, 0
for i = 1, tonumber(ARGV[4]) do
  local name, n = ARGV[a], tonumber(ARGV[a + 1])
  local k = 2 + 3 * i
  local added, dups
  added, dups, a = append_part(KEYS[k], KEYS[k + 1], KEYS[k + 2], now, window, a + 2, n)
  if added > 0 then redis.call('ZINCRBY', KEYS[1], 1, name) end
  appended, duplicates = appended + added, duplicates + dups
end
state_apply(KEYS[3], KEYS[4], stateKeys, stateAt, now)
return {appended, duplicates}
`;

/**
 * Cluster: a receiver's state writes after its append (the state lives in another slot). KEYS:
 * state namespaces set, kv-meta, then the state section's keys. ARGV: now, then the state section.
 */
export const WRITE_STATE = `${STATE}
local now = tonumber(ARGV[1])
local err = state_check(3, 2, now)
if err then return redis.error_reply(err) end
state_apply(KEYS[1], KEYS[2], 3, 2, now)
return 1
`;

/**
 * Live entries of a namespace, newest written first. KEYS: hash, order. ARGV: now, limit.
 * Returns a flat list key, raw, key, raw, ...
 */
export const LIST_STATE = `
local now, limit = tonumber(ARGV[1]), tonumber(ARGV[2])
local out, found, start = {}, 0, 0
while found < limit do
  local keys = redis.call('ZREVRANGE', KEYS[2], start, start + 99)
  if #keys == 0 then break end
  local vals = redis.call('HMGET', KEYS[1], unpack(keys))
  for i = 1, #keys do
    local raw = vals[i]
    if raw and found < limit then
      local x = string.match(raw, '^%d+|(%d*)|')
      if x == '' or tonumber(x) > now then
        out[#out + 1] = keys[i]
        out[#out + 1] = raw
        found = found + 1
      end
    end
  end
  start = start + 100
end
return out
`;

/**
 * Timers due at `now`, earliest first, and the due time of the next one. KEYS: timers hash, due
 * set. ARGV: now, limit. Returns {ids, raw values, next due or ''}.
 */
export const DUE_TIMERS = `
local ids = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
local vals = {}
if #ids > 0 then vals = redis.call('HMGET', KEYS[1], unpack(ids)) end
local nxt = redis.call('ZRANGE', KEYS[2], #ids, #ids, 'WITHSCORES')
return {ids, vals, nxt[2] or ''}
`;

/** Cluster: one partition's append. KEYS: log, cursor, seen. ARGV: now, window, n, n × (id, JSON). */
export const APPEND_ONE = `${APPEND_PART}
local added, dups = append_part(KEYS[1], KEYS[2], KEYS[3], tonumber(ARGV[1]), tonumber(ARGV[2]), 4, tonumber(ARGV[3]))
return {added, dups}
`;

/**
 * Cluster: registers partitions of a pipeline. Called before and after the per-partition appends,
 * bumping each partition's score, so that `UNREGISTER` (compare-and-delete on the score) can
 * never drop a partition whose append it did not see. KEYS: registry, pipelines set. ARGV:
 * pipeline, partition names.
 */
export const REGISTER = `
redis.call('SADD', KEYS[2], ARGV[1])
for i = 2, #ARGV do redis.call('ZINCRBY', KEYS[1], 1, ARGV[i]) end
return 1
`;

/** Cluster: forgets a drained partition unless an append registered it again meanwhile. */
export const UNREGISTER = `
local s = redis.call('ZSCORE', KEYS[1], ARGV[1])
if (s or '') == ARGV[2] then
  redis.call('ZREM', KEYS[1], ARGV[1])
  return 1
end
return 0
`;

/** Cluster: the partition side of a commit (after the state side), or catching up to a high-water mark. */
export const ADVANCE = `${STREAM_IDS}${ADVANCE_PART}
return advance_part(KEYS[1], KEYS[2], ARGV[1], tonumber(ARGV[2]))
`;

/**
 * A page commit (DESIGN 1). KEYS: groups, group versions, open-work set, outbox, outbox sequence,
 * recent failures, the partition's high-water key, partition registry, state namespaces set,
 * kv-meta, the pipeline's timers hash and timer due set, the pipelines set (status lists a
 * pipeline with timers), [single node with a cursor: log, cursor], then nT turn keys, nR revision keys and the state section's keys. ARGV: pipeline,
 * partition, cursor ('' for a commit that moves none: a timer page), turn TTL, revision TTL, idle
 * TTL, nG, nT, nR, nO, nF, mode ('single' | 'cluster'), base (the committed position the page was
 * read after, '' for none, '*' when unknown), now, max timers, index of the state section, index
 * of the timer section, then the groups as one JSON array of strings, nG × (key, version, open
 * flag, stored value) with the open flag '1' (add to the open-work set), '0' (remove) or ''
 * (leave it: see RedisStore.openFlag), then nT × created, nR × revision, nO × outbox JSON, nF ×
 * (time, failure JSON), the state section, the timer section.
 *
 * The groups travel as one argument, not four per group: a page's 250 groups were a thousand
 * arguments, and each costs the client (RESP framing, a byte count, a piece of the command
 * string) and the server (an argument object and a Lua string) more than its bytes do; one
 * cjson.decode of the list is cheaper on the server than that. The values inside stay the
 * stored strings (group-codec.ts): the script never decodes a group. Their versions are checked
 * with one HMGET per thousand groups instead of an HGET each.
 *
 * The base check refuses a page when another writer committed part of it since it was read; the
 * group and state version checks refuse it when something it read changed; a timer clear refuses
 * it when the timer already fired elsewhere.
 *
 * Everything is validated before anything is written, and a script runs atomically: a refused
 * commit changes nothing. In single mode the cursor is checked and advanced here too, so the whole
 * commit is one atomic step. In cluster mode the cursor lives in the partition's slot: this script
 * records the committed position in the high-water hash (atomically with the state) and the
 * partition side catches up afterwards (ADVANCE); it returns the partition's registry score for
 * UNREGISTER.
 */
export const COMMIT = `${STREAM_IDS}${ADVANCE_PART}${STATE}${TIMERS}
local pl, pt, cur = ARGV[1], ARGV[2], ARGV[3]
local turnTtl, revTtl, idle = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local nG, nT, nR, nO, nF = tonumber(ARGV[7]), tonumber(ARGV[8]), tonumber(ARGV[9]), tonumber(ARGV[10]), tonumber(ARGV[11])
local single = ARGV[12] == 'single'
local base = ARGV[13]
local now, maxTimers, stateAt, timersAt = tonumber(ARGV[14]), tonumber(ARGV[15]), tonumber(ARGV[16]), tonumber(ARGV[17])
local moves = cur ~= ''
local k = (single and moves) and 16 or 14
local stateKeys = k + nT + nR

if moves then
  local stored
  if single then
    stored = redis.call('GET', KEYS[15])
    if not stored and redis.call('EXISTS', KEYS[14]) == 0 then
      return redis.error_reply('VIGIL_STORE_CORRUPT commit for unknown partition ' .. pt .. ' of pipeline ' .. pl)
    end
  else
    stored = redis.call('GET', KEYS[7])
  end
  if (stored and not idgt(cur, stored)) or (base ~= '*' and (stored or '') ~= base) then
    return redis.error_reply('VIGIL_STORE_CONFLICT partition ' .. pt .. ' was committed by another writer since the page was read (at ' .. (stored or 'none') .. ')')
  end
end

local gl = nG > 0 and cjson.decode(ARGV[18]) or {}
if #gl ~= 4 * nG then
  return redis.error_reply('VIGIL_STORE_CORRUPT commit carries ' .. #gl .. ' group fields for ' .. nG .. ' groups')
end
-- In chunks of GROUP_CHUNK groups: one command per chunk, not one or three per group (a chunk's
-- 2 × GROUP_CHUNK values stay within Lua's stack limit for unpack).
for i = 1, nG, ${GROUP_CHUNK} do
  local ks, n = {}, 0
  for b = 4 * i - 3, 4 * math.min(i + ${GROUP_CHUNK - 1}, nG) - 3, 4 do
    n = n + 1
    ks[n] = gl[b]
  end
  local stored = redis.call('HMGET', KEYS[2], unpack(ks))
  for j = 1, n do
    local b = 4 * (i + j - 1)
    local have, version = tonumber(stored[j] or '0'), tonumber(gl[b - 2])
    if have ~= version - 1 then
      return redis.error_reply('VIGIL_STORE_CONFLICT group ' .. gl[b - 3] .. ' changed concurrently (version ' .. have .. ', expected ' .. (version - 1) .. ')')
    end
  end
end
local err = state_check(stateKeys, stateAt, now) or timers_check(KEYS[11], timersAt, maxTimers)
if err then return redis.error_reply(err) end

-- An open flag '' leaves the open-work set as it is (see RedisStore.openFlag).
local a = 19
for i = 1, nG, ${GROUP_CHUNK} do
  local gs, vs, opened, closed, n, no, nc = {}, {}, {}, {}, 0, 0, 0
  for b = 4 * i, 4 * math.min(i + ${GROUP_CHUNK - 1}, nG), 4 do
    local key, open = gl[b - 3], gl[b - 1]
    n = n + 2
    gs[n - 1], gs[n] = key, gl[b]
    vs[n - 1], vs[n] = key, gl[b - 2]
    if open == '1' then
      no = no + 1
      opened[no] = key
    elseif open == '0' then
      nc = nc + 1
      closed[nc] = key
    end
  end
  redis.call('HSET', KEYS[1], unpack(gs))
  redis.call('HSET', KEYS[2], unpack(vs))
  if no > 0 then redis.call('SADD', KEYS[3], unpack(opened)) end
  if nc > 0 then redis.call('SREM', KEYS[3], unpack(closed)) end
end
for i = 1, nT do
  redis.call('INCRBY', KEYS[k], ARGV[a])
  redis.call('PEXPIRE', KEYS[k], turnTtl)
  k, a = k + 1, a + 1
end
for i = 1, nR do
  redis.call('SET', KEYS[k], ARGV[a], 'PX', revTtl)
  k, a = k + 1, a + 1
end
if nO > 0 then
  -- One INCRBY reserves the page's sequence numbers (the same ones INCR per item gave).
  local seq = redis.call('INCRBY', KEYS[5], nO) - nO
  for i = 1, nO do
    seq = seq + 1
    redis.call('XADD', KEYS[4], seq .. '-0', 'o', ARGV[a])
    a = a + 1
  end
end
if nF > 0 then
  local function flush(cmd, key, t)
    if #t > 0 then redis.call(cmd, key, unpack(t)) end
    return {}
  end
  local fs = {}
  for i = 1, nF do
    fs[#fs + 1], fs[#fs + 2] = ARGV[a], ARGV[a + 1]
    if #fs >= 1000 then fs = flush('ZADD', KEYS[6], fs) end
    a = a + 2
  end
  flush('ZADD', KEYS[6], fs)
  redis.call('ZREMRANGEBYRANK', KEYS[6], 0, -21)
end
state_apply(KEYS[9], KEYS[10], stateKeys, stateAt, now)
timers_apply(KEYS[11], KEYS[12], KEYS[10], timersAt)
if tonumber(ARGV[timersAt + 1]) > 0 then redis.call('SADD', KEYS[13], pl) end

if not moves then return {''} end
if single then
  local len = advance_part(KEYS[14], KEYS[15], cur, idle)
  if len == 0 then redis.call('ZREM', KEYS[8], pt) end
  return {len}
end
redis.call('SET', KEYS[7], cur, 'PX', idle)
return {redis.call('ZSCORE', KEYS[8], pt) or ''}
`;

/** The entries after an exporter's cursor. KEYS: exporter cursors, outbox. ARGV: exporter, limit. */
export const READ_OUTBOX = `
local c = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0')
return redis.call('XRANGE', KEYS[2], (c + 1) .. '-0', '+', 'COUNT', ARGV[2])
`;

/**
 * Advances an exporter's cursor, records dead letters in the same step and trims what every
 * exporter has passed. KEYS: exporter cursors, outbox, dead-letter list, dead-letter list index.
 * ARGV: exporter, seq, max dead letters, n, n × dead letter JSON.
 */
export const ACK_OUTBOX = `
local n = tonumber(ARGV[4])
for i = 1, n do redis.call('LPUSH', KEYS[3], ARGV[4 + i]) end
if n > 0 then
  redis.call('LTRIM', KEYS[3], 0, tonumber(ARGV[3]) - 1)
  redis.call('SADD', KEYS[4], KEYS[3])
end
local c = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0')
if tonumber(ARGV[2]) > c then redis.call('HSET', KEYS[1], ARGV[1], ARGV[2]) end
local min = nil
for _, v in ipairs(redis.call('HVALS', KEYS[1])) do
  local x = tonumber(v)
  if not min or x < min then min = x end
end
if min and min > 0 then redis.call('XTRIM', KEYS[2], 'MINID', (min + 1) .. '-0') end
return 1
`;
