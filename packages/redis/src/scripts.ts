/**
 * The store's Lua scripts: each of claim, complete, renew, release and purge is one script, so it reads and writes a
 * record atomically in one round trip. A record is one hash under one key, so a script only ever touches one key
 * (one hash slot on a Cluster).
 *
 * Times are the engine's (whole ms since the epoch, passed in): a script never decides by Redis's clock. Redis's
 * clock only maps the record's end onto Redis's own expiry: each claim keeps the engine's clock minus Redis's
 * (`skew`), and writes expire the record a minute after `max(lease, expires) - skew` on Redis's clock. A record
 * expires by the engine's clock (the scripts treat it as absent); Redis deletes it a minute later, so hosts whose
 * clocks differ a little, or a test's clock, never see a record vanish before its time. Needs Redis 5 or later
 * (a script that reads TIME before it writes).
 *
 * Numbers are handed back as the strings the caller wrote: Lua would print a time of 13 digits as 1.7e+12.
 */

export interface Script {
  source: string;
  /** Its SHA-1, for EVALSHA, computed on first use with Web Crypto (so the package also loads on edge runtimes). */
  sha(): Promise<string>;
}

function script(source: string): Script {
  let digest: Promise<string> | undefined;
  return {
    source,
    sha() {
      digest ??= globalThis.crypto.subtle
        .digest("SHA-1", new TextEncoder().encode(source))
        .then((bytes) => Array.from(new Uint8Array(bytes), (byte) => byte.toString(16).padStart(2, "0")).join(""));
      return digest;
    },
  };
}

/** How long Redis keeps a record past its end by the engine's clock. */
export const EXPIRY_GRACE_MS = 60_000;

/** Expires the record a grace after it lasts, until `lease` and `expires`, mapped onto Redis's clock by `skew`. */
const EXPIRE_AT = `
local function expire_at(key, lease, expires, skew)
  redis.call('PEXPIREAT', key, math.max(lease, expires) - skew + ${EXPIRY_GRACE_MS})
end
`;

/**
 * KEYS[1] the record. ARGV: fingerprint, now, lease end, expiry. Inserts it, or replaces one past its TTL (and no
 * live lease), or takes over an in-progress one whose lease ended with the same fingerprint; otherwise returns it.
 *
 * The new fence is Redis's clock in microseconds, or one more than the record's fence if that is ahead: it grows
 * with every claim of the key and never repeats, not even once the record was released, expired, evicted or lost
 * with a restart, as long as this server's clock does not step back. (A counter kept beside the record would be
 * lost with it.)
 *
 * The record's fields are written before any other write: Redis checks `maxmemory` only at a script's first write,
 * so a claim over the limit under `noeviction` is refused with OOM before it changes anything.
 */
export const CLAIM = script(`${EXPIRE_AT}
local record = redis.call('HMGET', KEYS[1], 'state', 'fingerprint', 'fence', 'lease', 'expires', 'status', 'body')
local now = tonumber(ARGV[2])
local function claim(takeover)
  local clock = redis.call('TIME')
  local micros = tonumber(clock[1]) * 1000000 + tonumber(clock[2])
  local fence = math.max(micros, (tonumber(record[3]) or 0) + 1)
  local skew = now - math.floor(micros / 1000)
  redis.call('HSET', KEYS[1], 'state', 'in_progress', 'fingerprint', ARGV[1], 'fence', string.format('%d', fence),
    'lease', ARGV[3], 'expires', ARGV[4], 'skew', skew)
  redis.call('HDEL', KEYS[1], 'status', 'body')
  expire_at(KEYS[1], tonumber(ARGV[3]), tonumber(ARGV[4]), skew)
  return {'claimed', string.format('%d', fence), takeover}
end
if not record[1] then return claim(0) end
local running = record[1] == 'in_progress'
local lease_ended = running and tonumber(record[4]) <= now
if tonumber(record[5]) <= now and (not running or lease_ended) then return claim(0) end
if lease_ended and record[2] == ARGV[1] then return claim(1) end
return {'exists', record[1], record[2], record[3], record[4] or '', record[5], record[6] or '', record[7] or ''}
`);

/**
 * KEYS[1] the record. ARGV: fence, status, body, expiry. Completes it if it is in progress under that fence. Its first
 * write removes a field, which Redis lets through over `maxmemory`: the call already ran, and its stored answer is
 * what keeps a retry from running it again.
 */
export const COMPLETE = script(`${EXPIRE_AT}
local record = redis.call('HMGET', KEYS[1], 'state', 'fence', 'skew')
if record[1] ~= 'in_progress' or record[2] ~= ARGV[1] then return 0 end
redis.call('HDEL', KEYS[1], 'lease')
redis.call('HSET', KEYS[1], 'state', 'completed', 'status', ARGV[2], 'body', ARGV[3], 'expires', ARGV[4])
expire_at(KEYS[1], 0, tonumber(ARGV[4]), tonumber(record[3]))
return 1
`);

/**
 * KEYS[1] the record. ARGV: fence, lease end. Moves the lease of an in-progress record under that fence. Its first
 * write moves the key's expiry, which Redis lets through over `maxmemory`: a running call keeps its lease, as the
 * record grows by nothing.
 */
export const RENEW = script(`${EXPIRE_AT}
local record = redis.call('HMGET', KEYS[1], 'state', 'fence', 'skew', 'expires')
if record[1] ~= 'in_progress' or record[2] ~= ARGV[1] then return 0 end
expire_at(KEYS[1], tonumber(ARGV[2]), tonumber(record[4]), tonumber(record[3]))
redis.call('HSET', KEYS[1], 'lease', ARGV[2])
return 1
`);

/** KEYS[1] the record. ARGV: fence. Deletes an in-progress record under that fence. */
export const RELEASE = script(`
local record = redis.call('HMGET', KEYS[1], 'state', 'fence')
if record[1] ~= 'in_progress' or record[2] ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
return 1
`);

/** KEYS[1] a record. ARGV: now. Deletes it if it is past its TTL and no live lease holds it. */
export const PURGE = script(`
if redis.call('TYPE', KEYS[1]).ok ~= 'hash' then return 0 end
local record = redis.call('HMGET', KEYS[1], 'state', 'lease', 'expires')
if not record[1] then return 0 end
local now = tonumber(ARGV[1])
if tonumber(record[3]) > now then return 0 end
if record[1] == 'in_progress' and tonumber(record[2]) > now then return 0 end
redis.call('DEL', KEYS[1])
return 1
`);
