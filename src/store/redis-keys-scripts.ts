/**
 * The Lua scripts of tenant keys (SPEC section 17). Keys (P is the prefix,
 * `<id>` the tenant key's id, tenantKeyId): `P tkey:<id>` the hold, a hash
 * {token, until, op, run, call, tool, write} with `until` on Redis's clock;
 * `P tfence:<id>` the key's fencing counter (INCR; never expires, so a
 * token is never reused); `P tqueue:<id>` the waiters, a sorted set scored
 * by arrival (Redis's clock, in microseconds); `P twait:<waiter>` a waiter's
 * heartbeat, which lapses when its replica stops asking; `P tunc:<tenant>`
 * the tenant's unresolved uncertain writes, a hash operation id → JSON
 * {e: entry, s: the key's set or false}; `P tunca:<tenant>` the same
 * operation ids scored by when each was noted (the oldest is dropped past
 * the tenant's bound); `P tunck:<id>` the operation ids of tenant-scoped
 * ones on the key. A tenant-scoped entry stays until it is resolved, even
 * once its run is gone; a run-scoped one is listed while its run's
 * incarnation is held. Time is read with TIME, so replicas' clocks never
 * decide whose lease passed.
 */
import { script } from './redis-scripts.js'

/** Redis's clock, in ms, as a local `now` of the script. */
const NOW = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`

/**
 * KEYS: hold, fence, queue, the key's uncertain set, the tenant's uncertain hash, its age index.
 * ARGV: waiter, leaseMs, op, run, call, tool, write (1|0), queue (1|0),
 * waiter heartbeat ms, twait prefix, the conflict key, hold slack ms.
 * Answers {'held', token}, {'busy'} or {'uncertain', entry JSON}.
 */
export const ACQUIRE_KEY = script('acquire-key', `
${NOW}
local h = redis.call('HMGET', KEYS[1], 'token', 'until', 'op', 'run', 'call', 'tool', 'write')
if h[1] and tonumber(h[2]) <= now then
  -- Its holder died holding it: a write's outcome is unknown.
  if h[7] == '1' and redis.call('HEXISTS', KEYS[5], h[3]) == 0 then
    local e = { operationId = h[3], runId = h[4], callId = h[5], tool = h[6], conflictKey = ARGV[11], tenantScoped = true, cause = 'replica_lost', since = now }
    redis.call('HSET', KEYS[5], h[3], cjson.encode({ e = e, s = KEYS[4] }))
    redis.call('ZADD', KEYS[6], now, h[3])
    redis.call('SADD', KEYS[4], h[3])
  end
  redis.call('DEL', KEYS[1])
  h[1] = false
end
if ARGV[7] == '1' then
  local best, bestSince = false, false
  for _, op in ipairs(redis.call('SMEMBERS', KEYS[4])) do
    local raw = redis.call('HGET', KEYS[5], op)
    if not raw then
      redis.call('SREM', KEYS[4], op)
    else
      -- Listed until resolved, whether or not its run is still held.
      local e = cjson.decode(raw).e
      if op ~= ARGV[3] and (not best or e.since < bestSince) then
        best, bestSince = cjson.encode(e), e.since
      end
    end
  end
  if best then
    redis.call('ZREM', KEYS[3], ARGV[1])
    redis.call('DEL', ARGV[10] .. ARGV[1])
    return { 'uncertain', best }
  end
end
local first = true
while true do
  local head = redis.call('ZRANGE', KEYS[3], 0, 0)[1]
  if not head or head == ARGV[1] then break end
  if redis.call('EXISTS', ARGV[10] .. head) == 1 then
    first = false
    break
  end
  -- A waiter whose replica stopped asking.
  redis.call('ZREM', KEYS[3], head)
end
if h[1] or not first then
  if ARGV[8] == '1' then
    redis.call('ZADD', KEYS[3], 'NX', tonumber(t[1]) * 1000000 + tonumber(t[2]), ARGV[1])
    redis.call('SET', ARGV[10] .. ARGV[1], '1', 'PX', ARGV[9])
    redis.call('PEXPIRE', KEYS[3], ARGV[9])
  end
  return { 'busy' }
end
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('DEL', ARGV[10] .. ARGV[1])
local token = redis.call('INCR', KEYS[2])
redis.call('HSET', KEYS[1], 'token', token, 'until', now + tonumber(ARGV[2]), 'op', ARGV[3], 'run', ARGV[4], 'call', ARGV[5], 'tool', ARGV[6], 'write', ARGV[7])
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]) + tonumber(ARGV[12]))
return { 'held', string.format('%d', token) }
`)

/** KEYS: hold. ARGV: token, leaseMs, hold slack ms. 1 when the token still held the key and its lease was pushed on. */
export const RENEW_KEY = script('renew-key', `
${NOW}
local h = redis.call('HMGET', KEYS[1], 'token', 'until')
if h[1] ~= ARGV[1] or tonumber(h[2]) <= now then return 0 end
redis.call('HSET', KEYS[1], 'until', now + tonumber(ARGV[2]))
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]) + tonumber(ARGV[3]))
return 1
`)

/** KEYS: hold. ARGV: token. 1 when the token held the key (its lease not passed) and freed it. */
export const RELEASE_KEY = script('release-key', `
${NOW}
local h = redis.call('HMGET', KEYS[1], 'token', 'until')
if h[1] ~= ARGV[1] or tonumber(h[2]) <= now then return 0 end
redis.call('DEL', KEYS[1])
return 1
`)

/** KEYS: queue. ARGV: waiter, its heartbeat key. Leaves the queue. */
export const LEAVE_QUEUE = script('leave-queue', `
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('DEL', ARGV[2])
return 1
`)

/**
 * KEYS: the tenant's uncertain hash, its age index. ARGV: the most the tenant
 * keeps, then triples of operation id, entry JSON, the key's set or ''.
 * Listed once; past the bound the oldest go. Answers how many were dropped.
 */
export const NOTE_UNCERTAIN = script('note-tenant-uncertain', `
for i = 2, #ARGV, 3 do
  if redis.call('HEXISTS', KEYS[1], ARGV[i]) == 0 then
    local s = ARGV[i + 2]
    local e = cjson.decode(ARGV[i + 1])
    redis.call('HSET', KEYS[1], ARGV[i], cjson.encode({ e = e, s = (s ~= '' and s) or false }))
    redis.call('ZADD', KEYS[2], e.since, ARGV[i])
    if s ~= '' then redis.call('SADD', s, ARGV[i]) end
  end
end
local dropped = 0
while redis.call('ZCARD', KEYS[2]) > tonumber(ARGV[1]) do
  local op = redis.call('ZPOPMIN', KEYS[2])[1]
  local raw = redis.call('HGET', KEYS[1], op)
  if raw then
    local s = cjson.decode(raw).s
    if s then redis.call('SREM', s, op) end
    redis.call('HDEL', KEYS[1], op)
    dropped = dropped + 1
  end
end
return dropped
`)

/** KEYS: the tenant's uncertain hash, its age index. ARGV: operation ids. */
export const FORGET_UNCERTAIN = script('forget-tenant-uncertain', `
for i = 1, #ARGV do
  local raw = redis.call('HGET', KEYS[1], ARGV[i])
  if raw then
    local s = cjson.decode(raw).s
    if s then redis.call('SREM', s, ARGV[i]) end
    redis.call('HDEL', KEYS[1], ARGV[i])
  end
  redis.call('ZREM', KEYS[2], ARGV[i])
end
return 1
`)

/**
 * KEYS: the tenant's uncertain hash, its age index. ARGV: run key prefix.
 * The tenant-scoped entries, and the run-scoped ones whose run's incarnation
 * is held (a run of the same id made since is another run); the other
 * run-scoped ones are dropped. An entry without an incarnation (noted by an
 * earlier version), or whose run predates incarnations, goes by the run id.
 */
export const LIST_UNCERTAIN = script('list-tenant-uncertain', `
local out = {}
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
  local v = cjson.decode(all[i + 1])
  local keep = v.s or v.e.tenantScoped
  if not keep then
    local held = redis.call('HGET', ARGV[1] .. v.e.runId, 'i')
    if held and type(v.e.incarnation) == 'string' then keep = held == v.e.incarnation
    else keep = redis.call('EXISTS', ARGV[1] .. v.e.runId) == 1 end
  end
  if keep then
    out[#out + 1] = cjson.encode(v.e)
  else
    if v.s then redis.call('SREM', v.s, all[i]) end
    redis.call('HDEL', KEYS[1], all[i])
    redis.call('ZREM', KEYS[2], all[i])
  end
end
return out
`)
