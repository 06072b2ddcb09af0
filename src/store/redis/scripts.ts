/**
 * The Lua scripts of the Redis store. A script runs atomically on one Redis; in a cluster every
 * key a script touches must live in one slot, which the key layout (keys.ts) guarantees for each
 * script used in cluster mode. Errors start with a vigil error code so the client can map them.
 */

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
 * Appends one partition's events, dropping event ids seen within the dedupe window. The seen-set
 * and the log share the partition's slot, so "seen" and "appended" can never disagree.
 */
const APPEND_PART = `
local function append_part(log, cursor, seen, now, window, a, n)
  redis.call('ZREMRANGEBYSCORE', seen, '-inf', now)
  local added, dups = 0, 0
  for j = 1, n do
    local id, ev = ARGV[a], ARGV[a + 1]
    a = a + 2
    if redis.call('ZSCORE', seen, id) then
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
 * Single node: the whole append in one script. KEYS: partition registry, pipelines set, then
 * (log, cursor, seen) per partition. ARGV: pipeline, now, window, partition count, then per
 * partition: name, n, n × (event id, event JSON). Returns {appended, duplicates}.
 */
export const APPEND_ALL = `${APPEND_PART}
local now, window = tonumber(ARGV[2]), tonumber(ARGV[3])
redis.call('SADD', KEYS[2], ARGV[1])
local a, appended, duplicates = 5, 0, 0
for i = 1, tonumber(ARGV[4]) do
  local name, n = ARGV[a], tonumber(ARGV[a + 1])
  local k = 3 * i
  local added, dups
  added, dups, a = append_part(KEYS[k], KEYS[k + 1], KEYS[k + 2], now, window, a + 2, n)
  if added > 0 then redis.call('ZINCRBY', KEYS[1], 1, name) end
  appended, duplicates = appended + added, duplicates + dups
end
return {appended, duplicates}
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
 * recent failures, the partition's high-water key, partition registry, [single node: log,
 * cursor], then nT turn keys and nR revision keys. ARGV: pipeline, partition, cursor, turn TTL,
 * revision TTL, idle TTL, nG, nT, nR, nO, nF, mode ('single' | 'cluster'), base (the committed
 * position the page was read after, '' for none, '*' when unknown), then nG × (key, version,
 * open 0|1, JSON), nT × created, nR × revision, nO × outbox JSON, nF × (time, failure JSON).
 *
 * The base check refuses a page when another writer committed part of it since it was read; the
 * group version checks refuse it when a group it read changed.
 *
 * Everything is validated before anything is written, and a script runs atomically: a refused
 * commit changes nothing. In single mode the cursor is checked and advanced here too, so the whole
 * commit is one atomic step. In cluster mode the cursor lives in the partition's slot: this script
 * records the committed position in the high-water hash (atomically with the state) and the
 * partition side catches up afterwards (ADVANCE); it returns the partition's registry score for
 * UNREGISTER.
 */
export const COMMIT = `${STREAM_IDS}${ADVANCE_PART}
local pl, pt, cur = ARGV[1], ARGV[2], ARGV[3]
local turnTtl, revTtl, idle = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local nG, nT, nR, nO, nF = tonumber(ARGV[7]), tonumber(ARGV[8]), tonumber(ARGV[9]), tonumber(ARGV[10]), tonumber(ARGV[11])
local single = ARGV[12] == 'single'
local base = ARGV[13]
local k = single and 11 or 9

local stored
if single then
  stored = redis.call('GET', KEYS[10])
  if not stored and redis.call('EXISTS', KEYS[9]) == 0 then
    return redis.error_reply('VIGIL_STORE_CORRUPT commit for unknown partition ' .. pt .. ' of pipeline ' .. pl)
  end
else
  stored = redis.call('GET', KEYS[7])
end
if (stored and not idgt(cur, stored)) or (base ~= '*' and (stored or '') ~= base) then
  return redis.error_reply('VIGIL_STORE_CONFLICT partition ' .. pt .. ' was committed by another writer since the page was read (at ' .. (stored or 'none') .. ')')
end

local a = 14
for i = 1, nG do
  local key, version = ARGV[a], tonumber(ARGV[a + 1])
  local stored = tonumber(redis.call('HGET', KEYS[2], key) or '0')
  if stored ~= version - 1 then
    return redis.error_reply('VIGIL_STORE_CONFLICT group ' .. key .. ' changed concurrently (version ' .. stored .. ', expected ' .. (version - 1) .. ')')
  end
  a = a + 4
end

a = 14
for i = 1, nG do
  local key = ARGV[a]
  redis.call('HSET', KEYS[1], key, ARGV[a + 3])
  redis.call('HSET', KEYS[2], key, ARGV[a + 1])
  if ARGV[a + 2] == '1' then redis.call('SADD', KEYS[3], key) else redis.call('SREM', KEYS[3], key) end
  a = a + 4
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
for i = 1, nO do
  local seq = redis.call('INCR', KEYS[5])
  redis.call('XADD', KEYS[4], seq .. '-0', 'o', ARGV[a])
  a = a + 1
end
if nF > 0 then
  for i = 1, nF do
    redis.call('ZADD', KEYS[6], ARGV[a], ARGV[a + 1])
    a = a + 2
  end
  redis.call('ZREMRANGEBYRANK', KEYS[6], 0, -21)
end

if single then
  local len = advance_part(KEYS[9], KEYS[10], cur, idle)
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
