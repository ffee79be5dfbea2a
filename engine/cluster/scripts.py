"""The frontier's operations in Redis, each one Lua script, so that no count can drift.

Keys, under the prefix `crawlscope:<crawl id>:`:

    seen        SET    every URL the crawl has seen (the chapter's seen_urls)
    q:<host>    LIST   that host's queue of members, oldest first
    ready       ZSET   hosts with queued work and a free slot, by the time (ms) each may
                       next be fetched: a busy or slow host never blocks another's URLs
    next        HASH   host -> the earliest time (ms) of its next fetch (--delay, Crawl-delay)
    delay       HASH   host -> the Crawl-delay (ms) its robots.txt asks for
    busy        HASH   host -> leases in flight on it (--per-host, across the cluster)
    inflight    ZSET   leased members, by the time (ms) their lease expires
    n           HASH   unfinished (= queued + in flight: what join() waits on), queued,
                       done, failed, filtered

A member is "<host> <json [url, max_redirect, depth, referrer]>": a URL is queued once
(the seen set), so its member names its lease too. Time is Redis's own (TIME), so the
clocks of the machines never matter. Only commands Redis 6.2 has.
"""

from __future__ import annotations

# Shared by every script: ARGV[1] is the key prefix.
PRELUDE = """
local P = ARGV[1]
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function host_of(member)
  return string.match(member, '^(%S+) ')
end
local function num(value)
  return (value and tonumber(value)) or 0
end
-- A host is in `ready` exactly when it has queued work and a free slot.
local function wake(host, limit)
  if redis.call('LLEN', P .. 'q:' .. host) == 0
      or (limit > 0 and num(redis.call('HGET', P .. 'busy', host)) >= limit) then
    redis.call('ZREM', P .. 'ready', host)
  else
    redis.call('ZADD', P .. 'ready', 'NX', num(redis.call('HGET', P .. 'next', host)), host)
  end
end
-- The lease leaves the in-flight set; its host, or nil if it was not there (expired
-- and reclaimed, or ended already): then nothing may be counted twice.
local function release(member)
  if redis.call('ZREM', P .. 'inflight', member) == 0 then
    return nil
  end
  local host = host_of(member)
  redis.call('HINCRBY', P .. 'busy', host, -1)
  return host
end
local function requeue(member, host, limit)
  redis.call('LPUSH', P .. 'q:' .. host, member)
  redis.call('HINCRBY', P .. 'n', 'queued', 1)
  wake(host, limit)
end
"""

# ARGV: prefix, per-host limit, count of pairs, then (url, member) pairs, then URLs the
# rules filtered. A URL already seen does nothing: adding the roots again is harmless.
ADD = (
    PRELUDE
    + """
local limit = tonumber(ARGV[2])
local pairs_n = tonumber(ARGV[3])
local added = 0
for i = 0, pairs_n - 1 do
  local url, member = ARGV[4 + 2 * i], ARGV[5 + 2 * i]
  if redis.call('SADD', P .. 'seen', url) == 1 then
    local host = host_of(member)
    redis.call('RPUSH', P .. 'q:' .. host, member)
    redis.call('HINCRBY', P .. 'n', 'queued', 1)
    redis.call('HINCRBY', P .. 'n', 'unfinished', 1)
    wake(host, limit)
    added = added + 1
  end
end
for i = 4 + 2 * pairs_n, #ARGV do
  if redis.call('SADD', P .. 'seen', ARGV[i]) == 1 then
    redis.call('HINCRBY', P .. 'n', 'filtered', 1)
  end
end
return added
"""
)

# ARGV: prefix, per-host limit, members. A worker cancelled before its record was
# written: the member goes back to the front of its queue; unfinished does not move.
BACK = (
    PRELUDE
    + """
local limit = tonumber(ARGV[2])
local back = 0
for i = 3, #ARGV do
  local host = release(ARGV[i])
  if host then
    requeue(ARGV[i], host, limit)
    back = back + 1
  end
end
return back
"""
)

# ARGV: prefix, per-host limit, count of leases, then (member, outcome) pairs, then
# (host, Crawl-delay ms) pairs learned from robots.txt. task_done: idempotent, because
# only a lease still in flight is counted.
DONE = (
    PRELUDE
    + """
local limit = tonumber(ARGV[2])
local leases = tonumber(ARGV[3])
local ended = 0
for i = 0, leases - 1 do
  local member, outcome = ARGV[4 + 2 * i], ARGV[5 + 2 * i]
  local host = release(member)
  if host then
    redis.call('HINCRBY', P .. 'n', 'unfinished', -1)
    redis.call('HINCRBY', P .. 'n', outcome, 1)
    wake(host, limit)
    ended = ended + 1
  end
end
for i = 4 + 2 * leases, #ARGV, 2 do
  redis.call('HSET', P .. 'delay', ARGV[i], ARGV[i + 1])
end
return ended
"""
)

# ARGV: prefix, lease ms, members: each lease still held runs lease ms from now.
RENEW = (
    PRELUDE
    + """
local expiry = now_ms() + tonumber(ARGV[2])
local renewed = 0
for i = 3, #ARGV do
  renewed = renewed + redis.call('ZADD', P .. 'inflight', 'XX', 'CH', expiry, ARGV[i])
end
return renewed
"""
)

# ARGV: prefix, per-host limit. Expired leases (their process died, or lost Redis for
# longer than a lease) go back to the front of their queues.
RECLAIM = (
    PRELUDE
    + """
local limit = tonumber(ARGV[2])
local expired = redis.call('ZRANGEBYSCORE', P .. 'inflight', '-inf', now_ms(), 'LIMIT', 0, 1000)
for _, member in ipairs(expired) do
  requeue(member, release(member), limit)
end
return #expired
"""
)

# ARGV: prefix, per-host limit, leases wanted, lease ms, --delay ms. Takes from the
# hosts whose time has come, oldest first, and sets each one's next time in the same
# step (no other process can slip a fetch in between). Returns the members taken, then
# the crawl's figures: unfinished, queued, done, failed, filtered, in flight, seen,
# and ms until the next host is ready (-1: none is queued).
TAKE = (
    PRELUDE
    + """
local limit = tonumber(ARGV[2])
local want = tonumber(ARGV[3])
local lease_ms = tonumber(ARGV[4])
local base_gap = tonumber(ARGV[5])
local now = now_ms()
local taken = {}
while #taken < want do
  local hosts = redis.call('ZRANGEBYSCORE', P .. 'ready', '-inf', now, 'LIMIT', 0, 1)
  if #hosts == 0 then
    break
  end
  local host = hosts[1]
  local member = redis.call('LPOP', P .. 'q:' .. host)
  if member then
    redis.call('ZADD', P .. 'inflight', now + lease_ms, member)
    redis.call('HINCRBY', P .. 'busy', host, 1)
    redis.call('HINCRBY', P .. 'n', 'queued', -1)
    taken[#taken + 1] = member
    local gap = math.max(base_gap, num(redis.call('HGET', P .. 'delay', host)))
    redis.call('HSET', P .. 'next', host, now + gap)
    -- to the back of the hosts ready now, or out until its delay has passed
    redis.call('ZADD', P .. 'ready', 'XX', now + gap, host)
  end
  wake(host, limit)
end
local n = redis.call('HMGET', P .. 'n', 'unfinished', 'queued', 'done', 'failed', 'filtered')
local first = redis.call('ZRANGE', P .. 'ready', 0, 0, 'WITHSCORES')
local wait = -1
if #first > 0 then
  wait = math.max(0, tonumber(first[2]) - now)
end
return {taken, num(n[1]), num(n[2]), num(n[3]), num(n[4]), num(n[5]),
        redis.call('ZCARD', P .. 'inflight'), redis.call('SCARD', P .. 'seen'), wait}
"""
)
