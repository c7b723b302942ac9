/**
 * The Lua scripts of the Redis write-ahead records (SPEC section 17). Key
 * (P is the prefix): `P wal:<tenant>/<runId>/<createdAt>` a hash of one run
 * incarnation's writes recorded as about to be sent and not answered,
 * operation id → the write's JSON; kept as long as its run plus the run TTL,
 * deleted by UPDATE_RUN when a batch's answer is stored (every write of the
 * run is answered then) and by a take-over.
 */
import { LEASE, script } from './redis-scripts.js'
import { NOTE_UNCERTAIN } from './redis-uncertain-scripts.js'

/**
 * KEYS: run, wal. ARGV: owner, batchId, now, createdAt, tenant, slack, then operation id and JSON pairs.
 * Records the writes only while that batch on that owner holds the run's
 * lease (not lapsed at `now`) and the run is that incarnation: 1, else 0 and nothing.
 * Reads the run's incarnation and lease fields, decoding nothing (a record
 * of the earlier form, the whole record in `r`, is decoded).
 */
export const RECORD_WRITES = script('record-writes', `
local f = redis.call('HMGET', KEYS[1], 'i', 'lo', 'lb', 'le', 'r')
if f[5] then
  local run = cjson.decode(f[5])
  if run.tenant ~= ARGV[5] or string.format('%d', run.createdAt) ~= ARGV[4] then return 0 end
  local lease = run.inFlight
  if type(lease) ~= 'table' or lease.owner ~= ARGV[1] or lease.batchId ~= ARGV[2] or lease.leaseExpiresAt <= tonumber(ARGV[3]) then return 0 end
else
  if not f[1] or f[1] ~= ARGV[4] .. ' ' .. ARGV[5] then return 0 end
  if f[2] ~= ARGV[1] or f[3] ~= ARGV[2] or not f[4] or tonumber(f[4]) <= tonumber(ARGV[3]) then return 0 end
end
for i = 7, #ARGV, 2 do redis.call('HSET', KEYS[2], ARGV[i], ARGV[i + 1]) end
local ttl = redis.call('PTTL', KEYS[1])
if ttl > 0 then redis.call('PEXPIRE', KEYS[2], ttl + tonumber(ARGV[6])) end
return 1
`)

/**
 * KEYS: run, wal, idx:leased, idx:uncertain. ARGV: version read, version to
 * write, hot part JSON, how many records were read, runId, now, slack, uop
 * key prefix, cold part JSON ('' unchanged: the record read was not of the
 * earlier form), then the operation ids made uncertain.
 * The take-over's compare-and-set: only while the run is at the version read
 * and holds as many records as were read (none was added since), writes the
 * record (its expiry kept) without a lease, drops the records and the run's
 * place among the leased, and notes each new uncertainty's run as
 * INDEX_UNCERTAIN does.
 * Answers 1 when written, 0 when the run is gone, -1 when it changed.
 */
export const TAKE_OVER = script('take-over-writes', NOTE_UNCERTAIN + LEASE + `
local version = redis.call('HGET', KEYS[1], 'v')
if not version then return 0 end
if version ~= ARGV[1] or redis.call('HLEN', KEYS[2]) ~= tonumber(ARGV[4]) then return -1 end
redis.call('HSET', KEYS[1], 'v', ARGV[2], 'h', ARGV[3])
if ARGV[9] ~= '' then
  redis.call('HSET', KEYS[1], 'c', ARGV[9])
  redis.call('HDEL', KEYS[1], 'r')
end
setLease(KEYS[1], '')
redis.call('DEL', KEYS[2])
redis.call('ZREM', KEYS[3], ARGV[5])
note(KEYS[1], KEYS[4], ARGV[6], ARGV[7], ARGV[8], ARGV[5], 10)
return 1
`)
