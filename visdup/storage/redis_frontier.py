"""One crawl's shared frontier in Redis: its seen set, queue and leases, each step one Lua
script on the server (see :mod:`visdup.scheduler` for how a crawl uses it). No Scrapy here."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from visdup.errors import ConfigError, InputError
from visdup.storage.urls import mask_password

if TYPE_CHECKING:
    from collections.abc import Iterable

    from redis import Redis

#: Schemes redis-py opens (``unix://`` for a local socket).
SCHEMES = ("redis", "rediss", "unix")

#: Expired leases a pop moves back to the queue at most (the rest on the next pops).
REAP_BATCH = 100


#: Priorities are clamped to this magnitude so priority and arrival order fit in one exact
#: double: score = -priority * 2**32 + arrival (mod 2**32).
PRIORITY_LIMIT = 2**20

# KEYS: seen, queue, requests, seq. ARGV: fp, data, priority, force.
_PUSH = """
if redis.call('SADD', KEYS[1], ARGV[1]) == 0 and ARGV[4] ~= '1' then return 0 end
local seq = redis.call('INCR', KEYS[4]) % 4294967296
redis.call('HSET', KEYS[3], ARGV[1], ARGV[2])
local score = -tonumber(ARGV[3]) * 4294967296 + seq
redis.call('ZADD', KEYS[2], string.format('%.17g', score), ARGV[1])
return 1
"""

# Moves up to ARGV[1] expired leases back to the queue, with the score they were queued at.
# KEYS: queue, leases, leased. Needs `now` (ms) defined before it.
_REAP = """
local expired = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', 0, tonumber(ARGV[1]))
for _, fp in ipairs(expired) do
  local held = redis.call('HGET', KEYS[3], fp)
  local score = held and string.match(held, '^%S+ (%S+)') or '0'
  redis.call('ZADD', KEYS[1], 'NX', score, fp)
  redis.call('ZREM', KEYS[2], fp)
  redis.call('HDEL', KEYS[3], fp)
end
"""

_NOW = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
"""

# KEYS: queue, leases, leased, requests, tries, seq. ARGV: reap batch, worker, lease ms.
# Returns {fp, data, token, tries} or false.
_POP = (
    _NOW
    + _REAP
    + """
while true do
  local top = redis.call('ZPOPMIN', KEYS[1])
  if #top == 0 then return false end
  local fp, score = top[1], top[2]
  local data = redis.call('HGET', KEYS[4], fp)
  if data then
    local token = redis.call('INCR', KEYS[6])
    local tries = redis.call('HINCRBY', KEYS[5], fp, 1)
    redis.call('ZADD', KEYS[2], now + tonumber(ARGV[3]), fp)
    redis.call('HSET', KEYS[3], fp, token .. ' ' .. score .. ' ' .. ARGV[2])
    return {fp, data, tostring(token), tries}
  end
end
"""
)

# KEYS: queue, leases, leased, requests, tries. ARGV: fp, token. A request queued again while
# leased (a retry) keeps its data; an ack whose lease expired and moved on changes nothing.
_ACK = """
local held = redis.call('HGET', KEYS[3], ARGV[1])
if not held or string.match(held, '^(%S+)') ~= ARGV[2] then return 0 end
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('HDEL', KEYS[3], ARGV[1])
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  redis.call('HDEL', KEYS[4], ARGV[1])
  redis.call('HDEL', KEYS[5], ARGV[1])
end
return 1
"""

# KEYS: queue, leases, leased, requests, tries. ARGV: fp, token pairs. _ACK for each pair;
# returns one 1 (acknowledged) or 0 (the lease had moved on) per pair.
_ACK_MANY = """
local out = {}
for i = 1, #ARGV, 2 do
  local held = redis.call('HGET', KEYS[3], ARGV[i])
  if held and string.match(held, '^(%S+)') == ARGV[i + 1] then
    redis.call('ZREM', KEYS[2], ARGV[i])
    redis.call('HDEL', KEYS[3], ARGV[i])
    if not redis.call('ZSCORE', KEYS[1], ARGV[i]) then
      redis.call('HDEL', KEYS[4], ARGV[i])
      redis.call('HDEL', KEYS[5], ARGV[i])
    end
    out[#out + 1] = 1
  else
    out[#out + 1] = 0
  end
end
return out
"""

# KEYS: queue, leases, leased. ARGV: fp, token. The request goes back to the queue now.
_RELEASE = """
local held = redis.call('HGET', KEYS[3], ARGV[1])
if not held or string.match(held, '^(%S+)') ~= ARGV[2] then return 0 end
redis.call('ZADD', KEYS[1], 'NX', string.match(held, '^%S+ (%S+)'), ARGV[1])
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('HDEL', KEYS[3], ARGV[1])
return 1
"""

# KEYS: leases, leased. ARGV: lease ms, then fp, token pairs. Only leases still ours.
_RENEW = (
    _NOW
    + """
local n = 0
for i = 2, #ARGV, 2 do
  local held = redis.call('HGET', KEYS[2], ARGV[i])
  if held and string.match(held, '^(%S+)') == ARGV[i + 1] then
    redis.call('ZADD', KEYS[1], 'XX', now + tonumber(ARGV[1]), ARGV[i])
    n = n + 1
  end
end
return n
"""
)

# KEYS: queue, leases, leased. ARGV: reap batch. Returns {queued, leased}.
_COUNTS = (
    _NOW
    + _REAP
    + """
return {redis.call('ZCARD', KEYS[1]), redis.call('ZCARD', KEYS[2])}
"""
)


def check_url(url: str) -> str:
    """The frontier URL, or ConfigError when redis-py could not open it."""
    scheme = urlsplit(url).scheme.lower()
    if scheme not in SCHEMES:
        raise ConfigError(
            f"VISDUP_FRONTIER_URL must be a redis://HOST:PORT/DB URL, not {mask_password(url)!r}"
        )
    return url


def connect(url: str) -> Redis:
    """A Redis client for the frontier at ``url``, checked with a PING; InputError otherwise."""
    try:
        import redis
    except ImportError:
        raise InputError(
            "a shared frontier needs the redis package: pip install 'visdup[redis]'"
        ) from None
    check_url(url)
    try:
        client = redis.Redis.from_url(url, socket_timeout=30, socket_connect_timeout=10)
        client.ping()
    except (redis.RedisError, ValueError) as exc:
        raise InputError(f"cannot reach the frontier {mask_password(url)}: {exc}") from None
    return client


def key_prefix(crawl: str) -> str:
    """``visdup:{CRAWL}``: the braces keep one crawl's keys in one Redis Cluster slot."""
    name = crawl.replace("{", "(").replace("}", ")")
    return f"visdup:{{{name}}}"


class RedisFrontier:
    """One crawl's shared frontier in Redis: seen set, queue, leases; no Scrapy here.

    Each method is one Lua script (one atomic step on the server, timed by the server's
    clock, so the workers' clocks need not agree).
    """

    def __init__(self, client: Redis, crawl: str, *, worker: str, lease: float):
        self.client = client
        self.crawl = crawl
        self.worker = worker
        self.lease_ms = max(1, int(lease * 1000))
        prefix = key_prefix(crawl)
        names = ("seen", "queue", "requests", "leases", "leased", "tries", "seq", "checked")
        self.keys = {name: f"{prefix}:{name}" for name in names}
        self._push = client.register_script(_PUSH)
        self._pop = client.register_script(_POP)
        self._ack = client.register_script(_ACK)
        self._ack_many = client.register_script(_ACK_MANY)
        self._release = client.register_script(_RELEASE)
        self._renew = client.register_script(_RENEW)
        self._counts = client.register_script(_COUNTS)

    def _k(self, *names: str) -> list[str]:
        return [self.keys[n] for n in names]

    def push(self, fp: str, data: bytes, priority: int = 0, *, force: bool = False) -> bool:
        """Queue a request unless its fingerprint was seen (``force``: queue it anyway)."""
        priority = max(-PRIORITY_LIMIT, min(PRIORITY_LIMIT, int(priority)))
        keys = self._k("seen", "queue", "requests", "seq")
        return bool(self._push(keys=keys, args=[fp, data, priority, int(force)]))

    def pop(self) -> tuple[str, bytes, str, int] | None:
        """(fingerprint, data, lease token, times leased) of the first request, now leased."""
        keys = self._k("queue", "leases", "leased", "requests", "tries", "seq")
        got = self._pop(keys=keys, args=[REAP_BATCH, self.worker, self.lease_ms])
        if not got:
            return None
        fp, data, token, tries = got
        return _text(fp), data, _text(token), int(tries)

    def ack(self, fp: str, token: str) -> bool:
        """The request is done; False when the lease had expired and moved on."""
        keys = self._k("queue", "leases", "leased", "requests", "tries")
        return bool(self._ack(keys=keys, args=[fp, token]))

    def ack_many(self, leases: Iterable[tuple[str, str]]) -> list[bool]:
        """:meth:`ack` for several requests in one round trip, one answer each."""
        args: list[str] = []
        for fp, token in leases:
            args += [fp, token]
        if not args:
            return []
        keys = self._k("queue", "leases", "leased", "requests", "tries")
        return [bool(x) for x in self._ack_many(keys=keys, args=args)]

    def release(self, fp: str, token: str) -> bool:
        """Hand a leased request back to the queue now (its outcome is unknown)."""
        return bool(self._release(keys=self._k("queue", "leases", "leased"), args=[fp, token]))

    def renew(self, leases: Iterable[tuple[str, str]]) -> int:
        """Extend the leases this worker still holds; returns how many."""
        args: list[Any] = [self.lease_ms]
        for fp, token in leases:
            args += [fp, token]
        if len(args) == 1:
            return 0
        return int(self._renew(keys=self._k("leases", "leased"), args=args))

    def counts(self) -> tuple[int, int]:
        """(queued, leased) after moving expired leases back to the queue."""
        queued, leased = self._counts(keys=self._k("queue", "leases", "leased"), args=[10**6])
        return int(queued), int(leased)

    def mark_reseed(self) -> None:
        """Ask for another check of the store's frontier before the crawl ends."""
        self.client.delete(self.keys["checked"])

    def take_reseed(self) -> bool:
        """Claim the end-of-crawl check of the store's frontier (one worker gets it)."""
        return bool(self.client.set(self.keys["checked"], self.worker, nx=True))

    def clear(self) -> int:
        """Delete every key of this crawl (a fresh start under the same name)."""
        return int(self.client.delete(*self.keys.values()))


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
