/**
 * The Lua scripts behind the retry-safety methods of the Redis store
 * (SPEC section 14). Keys (P is the prefix): `P uop:<operationId>` the run
 * id of an unresolved uncertain write; `P ures:<operationId>` a hash of the
 * run id and the run's creation time of one resolved since; `P idx:uncertain` a sorted set of
 * those operation ids scored by their expiry (the gauge counts it);
 * `P lock:<name>` a short lock, its value the owner.
 */
import { script } from './redis-scripts.js'

/**
 * Shared by UNINDEX_UNCERTAIN and RUN_OF_UNCERTAIN: the creation time of the
 * run at key `run` as '%d' formats it, from its incarnation field `i`
 * (decoding the whole record only for one of the earlier form, in `r`);
 * nil when the run is gone.
 */
const CREATED_AT = `
local function createdAt (run)
  local f = redis.call('HMGET', run, 'i', 'r')
  if f[2] then return string.format('%d', cjson.decode(f[2]).createdAt) end
  if f[1] and f[1] ~= '' then return string.match(f[1], '^[^ ]*') end
  return nil
end
`

/**
 * Shared by INDEX_UNCERTAIN and the write-ahead take-over: notes the run of
 * the operation ids in ARGV from `first` on, kept the run's remaining time
 * plus the slack; 0 and nothing when the run is gone.
 */
export const NOTE_UNCERTAIN = `
local function note (run, idx, now, slack, prefix, runId, first)
  local ttl = redis.call('PTTL', run)
  if ttl <= 0 then return 0 end
  ttl = ttl + tonumber(slack)
  local exp = tonumber(now) + ttl
  for i = first, #ARGV do
    redis.call('SET', prefix .. ARGV[i], runId, 'PX', ttl)
    redis.call('ZADD', idx, exp, ARGV[i])
  end
  return 1
end
`

/**
 * KEYS: run, idx:uncertain. ARGV: now, run TTL slack, uop key prefix, runId, operation ids...
 * Notes each operation's run, kept the run's remaining time plus the slack
 * (a run in use pushes its own expiry on; its next batch notes them again).
 * Nothing when the run is gone.
 */
export const INDEX_UNCERTAIN = script('index-uncertain', NOTE_UNCERTAIN + `
return note(KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3], ARGV[4], 5)
`)

/**
 * KEYS: uop, idx:uncertain, ures. ARGV: operationId, run key prefix, retention.
 * No longer counted nor noted as unresolved; its run (with the run's
 * creation time, which tells this run from a later one of the same id) is
 * kept in `ures` as long as a receipt of the run would be: the run's
 * remaining time plus the retention. Nothing is kept when the run is gone.
 */
export const UNINDEX_UNCERTAIN = script('unindex-uncertain', CREATED_AT + `
redis.call('ZREM', KEYS[2], ARGV[1])
local runId = redis.call('GET', KEYS[1])
if not runId then return 0 end
redis.call('DEL', KEYS[1])
local run = ARGV[2] .. runId
local ttl = redis.call('PTTL', run)
local created = ttl > 0 and createdAt(run)
if not created then return 0 end
redis.call('HSET', KEYS[3], 'run', runId, 'created', created)
redis.call('PEXPIRE', KEYS[3], ttl + tonumber(ARGV[3]))
return 1
`)

/**
 * KEYS: uop, ures. ARGV: run key prefix. The run of an operation, unresolved
 * or resolved since, while that run is held (a resolved one: that very run,
 * not a later one of the same id).
 */
export const RUN_OF_UNCERTAIN = script('run-of-uncertain', CREATED_AT + `
local runId = redis.call('GET', KEYS[1])
if runId then
  if redis.call('EXISTS', ARGV[1] .. runId) == 1 then return runId end
  return false
end
local resolved = redis.call('HMGET', KEYS[2], 'run', 'created')
if not resolved[1] then return false end
if createdAt(ARGV[1] .. resolved[1]) ~= resolved[2] then return false end
return resolved[1]
`)

/** KEYS: idx:uncertain. ARGV: now. Drops expired entries, then counts. */
export const COUNT_UNCERTAIN = script('count-uncertain', `
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
return redis.call('ZCARD', KEYS[1])
`)

/** KEYS: op. ARGV: the value as read, its replacement. Compare-and-set that keeps the TTL: 1 when replaced. */
export const REVISE_RECEIPT = script('revise-receipt', `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'KEEPTTL')
return 1
`)

/** KEYS: lock. ARGV: owner, ttl. Taken (1) unless another owner holds it. */
export const TRY_LOCK = script('try-lock', `
local held = redis.call('GET', KEYS[1])
if held and held ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
`)

/** KEYS: lock. ARGV: owner. Released only by its owner. */
export const UNLOCK = script('unlock', `
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 1
`)
