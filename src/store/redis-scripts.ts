/**
 * The Lua scripts of the Redis run state and receipt journal (the uncertain
 * index's and the locks' are in redis-uncertain-scripts.ts). Each runs
 * atomically inside Redis, so a run's record, its indexes and its TTLs never
 * disagree between replicas.
 *
 * Keys (P is the prefix): `P run:<id>` a hash {v: version, h and c: the
 * record's hot and cold parts, lo, lb, le: its lease (see redis-run-form.ts),
 * i: its incarnation, rx: time until which the run's receipts are kept,
 * w: '1' while it waits} (a record of an earlier version: the whole record
 * in `r`); `P batchids:<id>` a
 * hash batchId → hash of its calls, for every batch id the run was sent (kept
 * out of the record, so an update moves a record of the same size however
 * many batches the run had); `P batches:<id>` a hash batchId → a finished
 * batch's record JSON; `P op:<operationId>` a receipt with its tenant,
 * JSON `{receipt, tenant}`, or for the pending receipt of a dispatch not yet
 * answered `{pending: token, receipt, tenant}` (the token first, so a script
 * tells whose it is by the value's first bytes, without decoding it);
 * `P journal:<id>` the run's operation ids in the order first stored; and four
 * sorted sets of run ids: `P idx:runs`, `P idx:active`, `P idx:ended` scored
 * by the run's expiry time, `P idx:leased` scored by its lease expiry; and
 * per tenant `P tenant:<tenant>`, its run ids scored by expiry as in
 * `idx:runs` (the newest used first when read backwards: the runs list).
 * Scripts build the keys of other runs from the prefix, so the store needs a
 * standalone Redis (or a primary with replicas), not Redis Cluster.
 */
import { createHash } from 'node:crypto'

/** A Lua script and the SHA-1 that EVALSHA knows it by. */
export interface Script { readonly name: string, readonly lua: string, readonly sha: string }

/** A script with its SHA-1. */
export function script (name: string, lua: string): Script {
  return { name, lua, sha: createHash('sha1').update(lua).digest('hex') }
}

/** Shared by create, update and take-over: the lease's fields of the run's hash (see redis-run-form.ts); `exp` '' for none. */
export const LEASE = `
local function setLease (key, exp, owner, batchId)
  if exp == '' then redis.call('HDEL', key, 'lo', 'lb', 'le') else redis.call('HSET', key, 'lo', owner, 'lb', batchId, 'le', exp) end
end
`

/** Shared by create and update: the run in its indexes. KEYS[ix..ix+4] are runs, active, ended, leased, and the run's tenant's runs. */
const INDEX = `
local function index (ix, runId, exp, state, lease)
  redis.call('ZADD', KEYS[ix], exp, runId)
  redis.call('ZADD', KEYS[ix + 4], exp, runId)
  if state == 'active' then redis.call('ZADD', KEYS[ix + 1], exp, runId) else redis.call('ZREM', KEYS[ix + 1], runId) end
  if state == 'ended' then redis.call('ZADD', KEYS[ix + 2], exp, runId) else redis.call('ZREM', KEYS[ix + 2], runId) end
  if lease ~= '' then redis.call('ZADD', KEYS[ix + 3], lease, runId) else redis.call('ZREM', KEYS[ix + 3], runId) end
end
`

/**
 * KEYS: run, idx:runs, idx:active, idx:ended, idx:leased, tenant.
 * ARGV: runId, hot part JSON, now, ttl, state, lease expiry or '', maxRuns, prefix, scan limit, version,
 * most runs per tenant (0: no bound), the run's incarnation (incarnationKey, kept as field `i`),
 * cold part JSON, lease owner, lease batch id.
 * Answers 0 when the run exists, -2 when its tenant holds its quota of runs
 * (checked first: a tenant at its quota evicts none of the others' runs; it
 * makes room by evicting its own ended run with the earliest expiry and no
 * valid lease, if it has one), -1 when full, 1 when stored. When full it
 * evicts one run first, as the memory store does: an ended one, else the
 * least recently used; never one whose lease is valid. A stored run starts
 * with no batch ids, batch answers or journal: those of an earlier run of
 * the same id (expired or evicted) are dropped (SPEC section 19).
 */
export const CREATE_RUN = script('create-run', INDEX + LEASE + `
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
local now = tonumber(ARGV[3])
for i = 2, 5 do redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', now) end
local perTenant = tonumber(ARGV[11] or '0')
if perTenant > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[6], '-inf', now)
  if redis.call('ZCARD', KEYS[6]) >= perTenant then
    -- Runs evicted for another tenant's leave their entry here: those do not count.
    for _, id in ipairs(redis.call('ZRANGE', KEYS[6], 0, -1)) do
      if redis.call('EXISTS', ARGV[8] .. 'run:' .. id) == 0 then redis.call('ZREM', KEYS[6], id) end
    end
    if redis.call('ZCARD', KEYS[6]) >= perTenant then
      -- Its own ended run goes first, as from a full store: an ended run only waits to expire.
      local victim = nil
      for _, id in ipairs(redis.call('ZRANGE', KEYS[6], 0, tonumber(ARGV[9]) - 1)) do
        if redis.call('ZSCORE', KEYS[4], id) then
          local lease = redis.call('ZSCORE', KEYS[5], id)
          if not lease or tonumber(lease) <= now then
            victim = id
            break
          end
        end
      end
      if not victim then return -2 end
      redis.call('DEL', ARGV[8] .. 'run:' .. victim, ARGV[8] .. 'batchids:' .. victim, ARGV[8] .. 'batches:' .. victim)
      for i = 2, 6 do redis.call('ZREM', KEYS[i], victim) end
    end
  end
end
local maxRuns, prefix, limit = tonumber(ARGV[7]), ARGV[8], tonumber(ARGV[9])
if redis.call('ZCARD', KEYS[2]) >= maxRuns then
  local function pick (key)
    for _, id in ipairs(redis.call('ZRANGE', key, 0, limit - 1)) do
      local lease = redis.call('ZSCORE', KEYS[5], id)
      if not lease or tonumber(lease) <= now then return id end
    end
    return nil
  end
  local victim = pick(KEYS[4]) or pick(KEYS[2])
  if victim then
    redis.call('DEL', prefix .. 'run:' .. victim, prefix .. 'batchids:' .. victim, prefix .. 'batches:' .. victim)
    for i = 2, 5 do redis.call('ZREM', KEYS[i], victim) end
  end
  if redis.call('ZCARD', KEYS[2]) >= maxRuns then return -1 end
end
-- A new incarnation of the id: nothing an earlier run of it left is listed or replayed (its receipts stay, by operation id).
redis.call('DEL', prefix .. 'batchids:' .. ARGV[1], prefix .. 'batches:' .. ARGV[1], prefix .. 'journal:' .. ARGV[1])
redis.call('HSET', KEYS[1], 'v', ARGV[10], 'h', ARGV[2], 'c', ARGV[13], 'rx', '0', 'i', ARGV[12])
setLease(KEYS[1], ARGV[6], ARGV[14], ARGV[15])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
index(2, ARGV[1], now + tonumber(ARGV[4]), ARGV[5], ARGV[6])
return 1
`)

/**
 * Compare-and-set of a run record on its version.
 * KEYS: run, batches, batchids, journal, idx:runs, idx:active, idx:ended, idx:leased, tenant, idx:waiting,
 * wal (the run's write-ahead records: answered, so deleted, with a stored batch record),
 * waiting:<tenant> (the tenant's runs with a waiting batch).
 * ARGV: the hot part JSON, a batch record's JSON ('' for none), the cold part
 * JSON ('' when unchanged), and the rest as one JSON array of strings (below
 * by its 1-based place; places 2, 13 and 23 are those three texts, sent as
 * '' in the array): version read, hot part JSON, now, ttl, runId, state, lease expiry or '',
 * receipt retention, receipt slack, '1' to drop the batch ids and records,
 * op key prefix, a batch record to store (its batchId and JSON; '' for none),
 * a batch id to record (its batchId and hash; '' for none), and the run's
 * place in idx:waiting (its waiting batch's expiry, '-' to leave it, '' when
 * neither the record read nor the one written holds a waiting batch), the
 * version to write (unique: see RedisStore), and a batch id whose entry the
 * writer assumed with the hash it assumed ('' when absent), the most runs of
 * the tenant with a waiting batch (0: no bound), the prefix of run keys, and
 * which write-ahead records a stored batch record answers ('' every one of
 * the run, '-' none, else comma-separated operation ids: a batch that shared
 * its run's lease answers only its own), the cold part JSON ('' when
 * unchanged: then a record of the earlier form, `r`, was not read), the
 * lease's owner and batch id. The version covers
 * the batch ids read with it: a batch id is recorded only in a write that
 * changes the version; an entry that was assumed, not read, is checked here.
 * Answers 1 when written, 0 when the run is gone, -3 when the write would
 * make the run wait while its tenant has its quota of waiting runs (checked
 * and counted here, atomically: replicas racing cannot both pass it; a run
 * waits while its key holds `w`), and when another write came
 * first (or the entry is not as assumed) the version, hot part, entry's hash,
 * cold part and whole record of the earlier form it found, so the writer can
 * try again at once.
 * The run's receipts are kept until `rx`, at least retention after the run's
 * expiry; when the run outlives that, every receipt's TTL is pushed on by the
 * slack too, so this loop runs about once per slack, not once per update.
 */
export const UPDATE_RUN = script('update-run', INDEX + LEASE + `
-- The short arguments come as one JSON array (one argument rather than twenty-two: each argument costs the client a few strings to encode), the texts apart.
local A = cjson.decode(ARGV[4])
local version = redis.call('HGET', KEYS[1], 'v')
if not version then return 0 end
local entry = ''
if A[18] ~= '' then entry = redis.call('HGET', KEYS[3], A[18]) or '' end
if version ~= A[1] or entry ~= A[19] then
  local found = redis.call('HMGET', KEYS[1], 'h', 'c', 'r')
  return { version, found[1], entry, found[2], found[3] }
end
local waits = A[16] ~= '' and A[16] ~= '-'
local quota = tonumber(A[20] or '0')
if waits and quota > 0 and redis.call('HGET', KEYS[1], 'w') ~= '1' and redis.call('ZCARD', KEYS[12]) >= quota then
  -- Entries of runs that stopped waiting without this script (expired, evicted, created again) do not count.
  for _, id in ipairs(redis.call('ZRANGE', KEYS[12], 0, -1)) do
    if redis.call('HGET', A[21] .. id, 'w') ~= '1' then redis.call('ZREM', KEYS[12], id) end
  end
  if redis.call('ZCARD', KEYS[12]) >= quota then return -3 end
end
local now, ttl = tonumber(A[3]), tonumber(A[4])
local exp = now + ttl
redis.call('HSET', KEYS[1], 'v', A[17], 'h', ARGV[1])
if ARGV[3] ~= '' then
  redis.call('HSET', KEYS[1], 'c', ARGV[3])
  redis.call('HDEL', KEYS[1], 'r')
end
setLease(KEYS[1], A[7], A[24], A[25])
redis.call('PEXPIRE', KEYS[1], ttl)
if A[12] ~= '' then
  redis.call('HSET', KEYS[2], A[12], ARGV[2])
  local answered = A[22] or ''
  if answered == '' then
    redis.call('DEL', KEYS[11])
  elseif answered ~= '-' then
    for op in string.gmatch(answered, '[^,]+') do redis.call('HDEL', KEYS[11], op) end
  end
end
if A[14] ~= '' then redis.call('HSET', KEYS[3], A[14], A[15]) end
if A[10] == '1' then
  redis.call('DEL', KEYS[2], KEYS[3])
else
  redis.call('PEXPIRE', KEYS[2], ttl)
  redis.call('PEXPIRE', KEYS[3], ttl)
end
index(5, A[5], exp, A[6], A[7])
if A[16] == '-' then
  redis.call('ZREM', KEYS[10], A[5])
  if KEYS[12] then redis.call('ZREM', KEYS[12], A[5]) end
  redis.call('HDEL', KEYS[1], 'w')
elseif waits then
  redis.call('ZADD', KEYS[10], A[16], A[5])
  if KEYS[12] then
    redis.call('ZADD', KEYS[12], A[16], A[5])
    if redis.call('PTTL', KEYS[12]) < ttl then redis.call('PEXPIRE', KEYS[12], ttl) end
  end
  redis.call('HSET', KEYS[1], 'w', '1')
end
local retention = tonumber(A[8])
local rx = tonumber(redis.call('HGET', KEYS[1], 'rx') or '0')
if rx < exp + retention then
  rx = exp + retention + tonumber(A[9])
  local keep = rx - now
  for _, op in ipairs(redis.call('LRANGE', KEYS[4], 0, -1)) do redis.call('PEXPIRE', A[11] .. op, keep) end
  redis.call('PEXPIRE', KEYS[4], keep)
  redis.call('HSET', KEYS[1], 'rx', string.format('%d', rx))
end
return 1
`)

/**
 * KEYS: op, journal, run. ARGV: stored JSON, operationId, now, retention,
 * the writer's run incarnation ('' unchecked).
 * First writer wins: answers the stored JSON when the operation has a receipt
 * already, nil when this one was stored. A receipt is kept as long as its run
 * and `retention` after it (longer if the run's receipts were pushed on). One
 * of an earlier incarnation of the run id than the run held (a late write,
 * SPEC section 19) is kept `retention` by its operation id, out of the
 * journal.
 */
export const PUT_RECEIPT = script('put-receipt', `
local existing = redis.call('GET', KEYS[1])
if existing then return existing end
local now, keep = tonumber(ARGV[3]), tonumber(ARGV[4])
local runTtl = redis.call('PTTL', KEYS[3])
if runTtl > 0 and (ARGV[5] or '') ~= '' then
  local held = redis.call('HGET', KEYS[3], 'i')
  if held and held ~= '' and held ~= ARGV[5] then
    redis.call('SET', KEYS[1], ARGV[1], 'PX', math.max(keep, 1))
    return false
  end
end
if runTtl > 0 then
  keep = runTtl + keep
  local rx = tonumber(redis.call('HGET', KEYS[3], 'rx') or '0')
  if rx - now > keep then keep = rx - now end
end
if keep < 1 then keep = 1 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', keep)
redis.call('RPUSH', KEYS[2], ARGV[2])
if redis.call('PTTL', KEYS[2]) < keep then redis.call('PEXPIRE', KEYS[2], keep) end
return false
`)

/**
 * KEYS: op. ARGV: the pending value's opening up to its token (`{"pending":"<token>",`), stored JSON.
 * Replaces a dispatch's pending receipt with its final one, only while the
 * value is still that pending one: answers 1 when replaced, else 0 (a final
 * receipt, another dispatch's pending one, or none). KEEPTTL keeps the
 * expiry PUT_RECEIPT and UPDATE_RUN gave it; the journal is not touched.
 */
export const SETTLE_RECEIPT = script('settle-receipt', `
local existing = redis.call('GET', KEYS[1])
if not existing or string.sub(existing, 1, #ARGV[1]) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'KEEPTTL')
return 1
`)

/**
 * KEYS: idx:runs, idx:active, idx:ended, idx:leased. ARGV: now.
 * Drops index entries of runs past their expiry, then counts.
 */
export const COUNT_RUNS = script('count-runs', `
local now = tonumber(ARGV[1])
for i = 1, 4 do redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', now) end
return { redis.call('ZCARD', KEYS[1]), redis.call('ZCARD', KEYS[2]), redis.call('ZCARD', KEYS[4]) }
`)

/**
 * KEYS: tenant. ARGV: now, prefix, cursor score ('+inf' for the first page),
 * cursor run id ('' for none), count.
 * Up to `count` of the tenant's runs, newest expiry first, after the cursor
 * (a lower score, or the same score and a lower id): a flat array of
 * triples: score, hot part and cold part JSON (for a record of the earlier
 * form: score, whole record JSON, ''). Drops entries whose run expired or was
 * evicted (their record is gone), so the index stays as small as the runs
 * held within their time to live.
 */
export const LIST_RUNS = script('list-runs', `
local now, prefix, count = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[5])
local cursorScore, cursorId = ARGV[3], ARGV[4]
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local out, gone, offset, found = {}, {}, 0, 0
while found < count do
  local chunk = redis.call('ZREVRANGEBYSCORE', KEYS[1], cursorScore, '-inf', 'WITHSCORES', 'LIMIT', offset, 100)
  if #chunk == 0 then break end
  offset = offset + #chunk / 2
  for i = 1, #chunk, 2 do
    local id, score = chunk[i], chunk[i + 1]
    if cursorId == '' or tonumber(score) ~= tonumber(cursorScore) or id < cursorId then
      local f = redis.call('HMGET', prefix .. 'run:' .. id, 'h', 'c', 'r')
      if f[3] or f[1] then
        if found < count then
          out[#out + 1] = score
          if f[3] then
            out[#out + 1] = f[3]
            out[#out + 1] = ''
          else
            out[#out + 1] = f[1]
            out[#out + 1] = f[2] or ''
          end
          found = found + 1
        end
      else
        gone[#gone + 1] = id
      end
    end
  end
end
if #gone > 0 then redis.call('ZREM', KEYS[1], unpack(gone)) end
return out
`)
