from __future__ import annotations

import random
import threading
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from visdup.index import BandLayout, FingerprintIndex, MemoryIndex, bands, layout_for
from visdup.index.base import index_layout, pair_layout_for
from visdup.storage.schema import signed as to_signed
from visdup.storage.schema import unsigned as to_unsigned

sqlalchemy = pytest.importorskip("sqlalchemy")
from sqlalchemy import create_engine, text  # noqa: E402

from visdup.index.sql import SqlIndex  # noqa: E402

PG_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/test"
MASK = (1 << 64) - 1


def flip(fp: int, n: int, rnd: random.Random) -> int:
    for bit in rnd.sample(range(64), n):
        fp ^= 1 << bit
    return fp


def planted(rnd: random.Random, n: int, k: int) -> list[int]:
    """Random fingerprints, a third of them near copies (1..k+2 bits) of earlier ones."""
    fps: list[int] = []
    for _ in range(n):
        if fps and rnd.random() < 0.33:
            fps.append(flip(rnd.choice(fps), rnd.randint(0, k + 2), rnd))
        else:
            fps.append(rnd.getrandbits(64))
    return fps


def brute(stored: dict[int, int], fp: int, k: int) -> set[tuple[int, int, int]]:
    return {
        (key, other, (fp ^ other).bit_count())
        for key, other in stored.items()
        if (fp ^ other).bit_count() <= k
    }


# -- band layouts -----------------------------------------------------------------------------


@pytest.mark.parametrize("k", range(0, 11))
def test_default_layout_covers_k(k):
    layout = layout_for(k)
    assert layout.k >= k
    keys = bands(12345, k)
    assert len(keys) == layout.tables == len(set(keys))
    assert all(0 <= key < 2**63 for key in keys)


@settings(max_examples=300, deadline=None)
@given(
    fp=st.integers(0, MASK),
    layout=st.sampled_from([BandLayout(4), BandLayout(7), BandLayout(5, 2), BandLayout(8, 2)]),
    data=st.data(),
)
def test_pigeonhole_any_fp_within_k_shares_a_key(fp, layout, data):
    bits = data.draw(st.sets(st.integers(0, 63), max_size=layout.k))
    other = fp
    for bit in bits:
        other ^= 1 << bit
    assert set(layout.keys(fp)) & set(layout.keys(other))


def test_keys_of_different_tables_and_layouts_never_collide():
    a, b = BandLayout(4), BandLayout(5, 2)
    assert not set(a.keys(0)) & set(a.keys(MASK)) - set()
    assert not set(a.keys(7)) & set(b.keys(7))
    assert len(set(a.keys(0))) == 4  # same bits, but the table number differs
    assert BandLayout.decode(b.keys(99)[3]) == (5, 2)


def test_bad_layouts_refused():
    with pytest.raises(ValueError):
        BandLayout(2, 2)  # 64-bit keys do not fit beside the header
    with pytest.raises(ValueError):
        BandLayout(16, 5)  # too many tables
    with pytest.raises(ValueError):
        layout_for(-1)


def test_signed_round_trip():
    for fp in (0, 1, 2**63 - 1, 2**63, MASK):
        assert -(2**63) <= to_signed(fp) < 2**63
        assert to_unsigned(to_signed(fp)) == fp


# -- behaviour common to every backend ---------------------------------------------------------


@pytest.fixture
def sqlite_engine(tmp_path):
    engine = create_engine(f"sqlite:///{tmp_path / 'index.sqlite3'}")
    yield engine
    engine.dispose()


@pytest.fixture(scope="module")
def pg_engine():
    try:
        import psycopg  # noqa: F401
    except ImportError:
        pytest.skip("psycopg is not installed")
    engine = create_engine(PG_URL)
    try:
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
    except Exception as exc:  # any connection failure means: no server to test against
        engine.dispose()
        pytest.skip(f"PostgreSQL unreachable at 127.0.0.1:5432: {type(exc).__name__}")
    yield engine
    engine.dispose()


@pytest.fixture
def pg_schema(pg_engine):
    schema = f"visdup_test_{uuid.uuid4().hex[:12]}"
    with pg_engine.begin() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    yield schema
    with pg_engine.begin() as conn:
        conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))


BACKENDS = ["memory", "scan", "sqlite", "postgres"]


@pytest.fixture(params=BACKENDS)
def make_index(request, tmp_path):
    made = []

    def make(k=3, **kw):
        if request.param == "memory":
            index = MemoryIndex(k, **kw)
        elif request.param == "scan":
            index = MemoryIndex(k, method="scan", **kw)
        elif request.param == "sqlite":
            engine = create_engine(f"sqlite:///{tmp_path / 'index.sqlite3'}")
            made.append(engine)
            index = SqlIndex(engine, kw.pop("channel", "structure"), k, **kw)
        else:
            engine = request.getfixturevalue("pg_engine")
            schema = request.getfixturevalue("pg_schema")
            index = SqlIndex(engine, kw.pop("channel", "structure"), k, schema=schema, **kw)
        return index

    make.backend = request.param
    yield make
    for engine in made:
        engine.dispose()


def load(index, items):
    if hasattr(index, "add_many") and len(items) > 50:
        index.add_many(items)
    else:
        for key, fp in items:
            index.add(key, fp)


@pytest.mark.parametrize("k", [3, 6])
def test_query_matches_brute_force(make_index, k):
    rnd = random.Random(k)
    n = 3000 if make_index.backend in ("memory", "scan") else 1500
    fps = planted(rnd, n, k)
    index = make_index(k)
    assert isinstance(index, FingerprintIndex)
    stored = dict(enumerate(fps))
    load(index, list(stored.items()))
    assert len(index) == n
    probes = [flip(rnd.choice(fps), rnd.randint(0, k + 1), rnd) for _ in range(150)]
    probes += [rnd.getrandbits(64) for _ in range(20)]
    hits = 0
    for fp in probes:
        got = index.query(fp)
        assert set(got) == brute(stored, fp, k)
        assert len(got) == len(set(got))
        hits += bool(got)
    assert hits > 100  # the planted neighbours were found, not just an empty answer


def test_nearest_first_and_limit(make_index):
    index = make_index(3)
    base = 0x0123456789ABCDEF
    items = [(10, base ^ 0b111), (11, base), (12, base ^ 0b1), (13, base ^ 0b11), (14, base)]
    items += [(20, base ^ 0b1111)]  # 4 bits away: beyond k
    load(index, items)
    got = index.query(base)
    assert got == [
        (11, base, 0),
        (14, base, 0),
        (12, base ^ 1, 1),
        (13, base ^ 0b11, 2),
        (10, base ^ 0b111, 3),
    ]
    assert index.query(base, limit=1) == [(11, base, 0)]
    assert index.query(base, limit=3) == got[:3]
    assert index.query(base, limit=0) == []
    assert index.query(base, k=1) == got[:3]
    assert index.query(base, k=0) == got[:2]
    assert index.query(base ^ 0b111, k=0) == [(10, base ^ 0b111, 0)]


@pytest.mark.parametrize("k", [3, 6])
def test_limited_lookups_are_the_nearest_keys_in_order(make_index, k):
    """A lookup with a limit (the one a page's labelling makes) gives the ``limit`` stored keys
    nearest the query, by distance and then by key, also where many keys share a fingerprint
    (a templated site), some of them the query's own, and where the limit cuts a distance's
    keys in two. PostgreSQL answers it in one statement of its own."""
    rnd = random.Random(100 + k)
    fps = planted(rnd, 300, k)
    stored: dict[int, int] = {}
    for fp in fps:
        for _ in range(rnd.choice([1, 1, 1, 3, 12])):  # keys sharing one fingerprint
            stored[rnd.randrange(1, 1 << 40)] = fp
        if rnd.random() < 0.1:  # signed on the server: the top bit set
            stored[rnd.randrange(1, 1 << 40)] = fp | (1 << 63)
    index = make_index(k)
    load(index, sorted(stored.items()))
    probes = [flip(rnd.choice(fps), rnd.randint(0, k + 1), rnd) for _ in range(60)]
    probes += [rnd.choice(fps) for _ in range(20)] + [rnd.getrandbits(64) for _ in range(5)]
    cut = 0
    for fp in probes:
        nearest = sorted(brute(stored, fp, k), key=lambda hit: (hit[2], hit[0]))
        for limit in (1, 5, 64):
            got = index.query(fp, limit=limit)
            assert got == nearest[:limit]
            cut += len(nearest) > limit and nearest[limit - 1][2] == nearest[limit][2]
        assert index.query(fp, k=1, limit=64) == [hit for hit in nearest if hit[2] <= 1][:64]
    assert cut > 10  # limits fell inside a distance's keys, where the order by key decides


@pytest.mark.postgres
def test_limited_lookups_count_bits_without_bit_count_before_postgresql_14(
    pg_engine, pg_schema, monkeypatch
):
    """Before PostgreSQL 14 (no ``bit_count``) the one-statement lookup counts a distance's
    bits from its text: the same keys in the same order."""
    monkeypatch.setattr(pg_engine.dialect, "server_version_info", (13, 0))
    index = SqlIndex(pg_engine, "structure", 3, schema=pg_schema)
    assert "bit_count" not in str(index._nearest_query)
    rnd = random.Random(7)
    fps = planted(rnd, 400, 3)
    stored = {key: fp for key, fp in enumerate(fps)} | {1000 + i: fps[i] for i in range(40)}
    load(index, sorted(stored.items()))
    for fp in [flip(rnd.choice(fps), rnd.randint(0, 4), rnd) for _ in range(40)]:
        nearest = sorted(brute(stored, fp, 3), key=lambda hit: (hit[2], hit[0]))
        assert index.query(fp, limit=5) == nearest[:5]


def test_add_replaces_remove_forgets(make_index):
    index = make_index(3)
    fp = 0xFEDCBA9876543210
    index.add(1, fp)
    index.add(2, fp)
    index.add(1, fp ^ (1 << 63))
    assert len(index) == 2
    assert index.query(fp) == [(2, fp, 0), (1, fp ^ (1 << 63), 1)]
    index.remove(2)
    index.remove(2)
    index.remove(99)
    assert len(index) == 1
    assert index.query(fp) == [(1, fp ^ (1 << 63), 1)]
    index.remove(1)
    assert index.query(fp) == []
    assert len(index) == 0


def test_extreme_fingerprints(make_index):
    index = make_index(3)
    index.add(1, 0)
    index.add(2, MASK)
    index.add(3, 1 << 63)
    assert index.query(0) == [(1, 0, 0), (3, 1 << 63, 1)]
    assert index.query(MASK) == [(2, MASK, 0)]
    with pytest.raises(ValueError):
        index.add(4, 1 << 64)
    with pytest.raises(ValueError):
        index.query(-1)


def test_k_beyond_layout_refused(make_index):
    index = make_index(3)
    if make_index.backend == "scan":
        assert index.query(0, k=20) == []
    else:
        with pytest.raises(ValueError):
            index.query(0, k=5)


def test_scan_serves_any_k():
    index = MemoryIndex(20, method="scan")
    index.add(1, 0)
    index.add(2, (1 << 20) - 1)
    index.add(3, (1 << 21) - 1)
    assert index.query(0) == [(1, 0, 0), (2, (1 << 20) - 1, 20)]
    with pytest.raises(ValueError):
        MemoryIndex(20)


def test_candidate_cap_bounds_work_and_keeps_nearest_of_those_seen():
    index = MemoryIndex(3, max_candidates=50)
    base = random.Random(3).getrandbits(64)
    rnd = random.Random(4)
    for key in range(500):
        index.add(key, flip(base, rnd.randint(1, 3), rnd))
    got = index.query(base)
    assert 0 < len({fp for _, fp, _ in got}) <= 50  # the cap counts distinct fingerprints
    assert [d for _, _, d in got] == sorted(d for _, _, d in got)
    full = MemoryIndex(3)
    for key in range(500):
        full.add(key, index.fingerprint(key))
    assert len(full.query(base)) > 50


def test_templated_site_shares_one_fingerprint():
    """Hundreds of keys under one fingerprint are compared once and all returned."""
    index = MemoryIndex(6)
    fp = 0xA5A5A5A5A5A5A5A5
    for key in range(1000):
        index.add(key, fp)
    index.add(5000, fp ^ 0b101)
    got = index.query(fp ^ 1)
    assert len(got) == 1001
    assert got[0] == (0, fp, 1) and got[-1] == (5000, fp ^ 0b101, 1)
    assert index.query(fp, limit=2) == [(0, fp, 0), (1, fp, 0)]


# -- SQL specifics ----------------------------------------------------------------------------


def test_sql_channels_share_one_table(sqlite_engine):
    a = SqlIndex(sqlite_engine, "structure", 3)
    b = SqlIndex(sqlite_engine, "content", 3)
    a.add(1, 42)
    b.add(1, 43)
    assert a.query(42) == [(1, 42, 0)]
    assert b.query(42) == [(1, 43, 1)]
    assert len(a) == len(b) == 1


def test_sql_refuses_channel_indexed_under_another_layout(sqlite_engine):
    SqlIndex(sqlite_engine, "structure", 6).add(1, 42)
    with pytest.raises(ValueError, match="indexed with"):
        SqlIndex(sqlite_engine, "structure", 3)
    SqlIndex(sqlite_engine, "content", 3).add(1, 42)  # another channel may differ


def test_sql_refuses_too_few_band_columns(sqlite_engine):
    SqlIndex(sqlite_engine, "content", 3)  # 4 band columns
    with pytest.raises(ValueError, match="band columns"):
        SqlIndex(sqlite_engine, "structure", 6)


def test_sql_caller_transaction_rolls_back(sqlite_engine):
    index = SqlIndex(sqlite_engine, "structure", 3)
    with sqlite_engine.connect() as conn, conn.begin() as tx:
        index.lock(conn, 7)  # a no-op on SQLite
        index.add(1, 7, conn=conn)
        assert index.query(7, conn=conn) == [(1, 7, 0)]
        tx.rollback()
    assert index.query(7) == []
    assert len(index) == 0


@pytest.fixture(params=["sqlite", "postgres"])
def sql_index(request, tmp_path):
    if request.param == "sqlite":
        engine = create_engine(f"sqlite:///{tmp_path / 'bulk.sqlite3'}")
        yield SqlIndex(engine, "structure", 3)
        engine.dispose()
    else:
        engine = request.getfixturevalue("pg_engine")
        yield SqlIndex(engine, "structure", 3, schema=request.getfixturevalue("pg_schema"))


def test_sql_bulk_add_new_keys(sql_index):
    index = sql_index
    rnd = random.Random(5)
    items = [(key, rnd.getrandbits(64)) for key in range(12000)]
    assert index.add_many(items, new_keys=True) == 12000
    assert len(index) == 12000
    key, fp = items[777]
    assert (key, fp, 0) in index.query(fp)
    assert index.add_many([(key, fp ^ 1)]) == 1  # an upsert: the key moves
    assert index.fingerprint(key) == fp ^ 1
    assert len(index) == 12000


def test_sql_candidate_cap(sql_index):
    base = 0x5555AAAA5555AAAA
    rnd = random.Random(8)
    capped = SqlIndex(
        sql_index.engine, "capped", 3, max_candidates=20, schema=sql_index.table.schema
    )
    items = [(key, flip(base, rnd.randint(0, 2), rnd)) for key in range(400)]
    capped.add_many(items)
    sql_index.add_many(items)
    got = capped.query(base)
    assert 0 < len({fp for _, fp, _ in got}) <= 20
    assert [d for _, _, d in got] == sorted(d for _, _, d in got)
    assert len({fp for _, fp, _ in sql_index.query(base)}) > 20


def test_sql_persists_across_instances(tmp_path):
    url = f"sqlite:///{tmp_path / 'persist.sqlite3'}"
    engine = create_engine(url)
    SqlIndex(engine, "structure", 3).add_many([(1, 5), (2, 6)])
    engine.dispose()
    engine = create_engine(url)
    index = SqlIndex(engine, "structure", 3)
    assert index.query(4) == [(1, 5, 1), (2, 6, 1)]
    assert index.fingerprint(2) == 6
    engine.dispose()


@pytest.mark.postgres
def test_postgres_concurrent_writers_never_miss_a_neighbour(pg_engine, pg_schema):
    """Four writers each insert one member of every group of near-identical pages at once.

    Check-then-insert under ``lock``: exactly one member per group may find nothing (the
    first to commit); every later one must see an earlier member.
    """
    index = SqlIndex(pg_engine, "structure", 3, schema=pg_schema)
    rnd = random.Random(11)
    writers, groups = 4, 40
    members = []
    for _ in range(groups):
        base = rnd.getrandbits(64)
        members.append([flip(base, rnd.randint(0, 1), rnd) for _ in range(writers)])
    found_nothing = [0] * groups
    errors: list[BaseException] = []
    barrier = threading.Barrier(writers)
    counter = threading.Lock()

    def write(w: int) -> None:
        try:
            for g in range(groups):
                fp = members[g][w]
                barrier.wait()
                with pg_engine.begin() as conn:
                    index.lock(conn, fp)
                    hits = index.query(fp, conn=conn)
                    index.add(g * writers + w, fp, conn=conn)
                if not hits:
                    with counter:
                        found_nothing[g] += 1
        except BaseException as exc:
            errors.append(exc)
            barrier.abort()

    threads = [threading.Thread(target=write, args=(w,)) for w in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors
    assert len(index) == writers * groups
    assert found_nothing == [1] * groups


@pytest.mark.postgres
def test_postgres_lock_blocks_a_near_writer_until_commit(pg_engine, pg_schema):
    index = SqlIndex(pg_engine, "structure", 3, schema=pg_schema)
    fp = 0x0F0F0F0F0F0F0F0F
    waited = threading.Event()
    seen: list[list] = []
    with pg_engine.connect() as first:
        tx = first.begin()
        index.lock(first, fp)
        index.add(1, fp, conn=first)

        def second() -> None:
            with pg_engine.begin() as conn:
                index.lock(conn, fp ^ 0b11)
                waited.set()
                seen.append(index.query(fp ^ 0b11, conn=conn))

        thread = threading.Thread(target=second)
        thread.start()
        thread.join(0.5)
        assert not waited.is_set()  # blocked behind the first transaction's lock
        tx.commit()
        thread.join(10)
    assert seen == [[(1, fp, 2)]]


def test_near_is_complete_to_the_layout_k_and_best_effort_beyond():
    rnd = random.Random(8)
    index = MemoryIndex(k=6, layout=layout_for(8))
    stored = {}
    base = rnd.getrandbits(64)
    for key in range(400):
        fp = flip(base, rnd.randrange(0, 20), rnd)
        stored[key] = fp
        index.add(key, fp)
    for _ in range(30):
        q = flip(base, rnd.randrange(0, 6), rnd)
        got = index.near(q, 16)
        # every stored fingerprint within the layout's k, nothing beyond the radius
        assert {(k, f, d) for k, f, d in got if d <= 8} == brute(stored, q, 8)
        assert all(d <= 16 and (f ^ q).bit_count() == d for _k, f, d in got)
        assert [d for _k, _f, d in got] == sorted(d for _k, _f, d in got)
    # 12 bits apart, but all in two of the ten blocks: found through the other blocks' bands
    q = rnd.getrandbits(64)
    far = q ^ 0b111111 ^ (0b111111 << 58)
    index.add(999, far)
    assert (999, far, 12) in index.near(q, 16)
    assert (999, far, 12) not in index.near(q, 11)
    assert index.query(q, k=8) == [r for r in index.near(q, 8)]


# -- the pair-key layout (VISDUP_INDEX_LAYOUT = "pairs") ----------------------------------------


@pytest.mark.parametrize("k", range(0, 11))
def test_pair_layout_covers_k_with_keys_at_least_as_wide(k):
    pairs, banded = index_layout("pairs", k), index_layout("bands", k)
    assert pairs.per_key == 2 and pairs.k >= k
    assert pairs.key_bits >= banded.key_bits
    if k >= 4:
        assert pairs == banded  # the bands layout already keys on pairs there


def test_unknown_layout_refused():
    with pytest.raises(ValueError, match="unknown index layout"):
        index_layout("triples", 3)


@settings(max_examples=300, deadline=None)
@given(fp=st.integers(0, MASK), k=st.integers(1, 6), data=st.data())
def test_pair_layout_pigeonhole(fp, k, data):
    layout = pair_layout_for(k)
    bits = data.draw(st.sets(st.integers(0, 63), max_size=k))
    other = fp
    for bit in bits:
        other ^= 1 << bit
    assert set(layout.keys(fp)) & set(layout.keys(other))


def _layout_pair(engine, schema: str | None, k: int) -> tuple[SqlIndex, SqlIndex]:
    """Both layouts side by side in one band table (pairs first: it needs more columns)."""
    pairs = SqlIndex(engine, "pairs", k, layout="pairs", schema=schema)
    banded = SqlIndex(engine, "bands", k, layout="bands", schema=schema)
    return pairs, banded


def _check_layouts_agree(pairs: SqlIndex, banded: SqlIndex, k: int, seed: int) -> None:
    rnd = random.Random(seed)
    fps = planted(rnd, 3000, k)
    stored = dict(enumerate(fps))
    for index in (pairs, banded):
        index.add_many(stored.items(), new_keys=True)
    probes = [flip(rnd.choice(fps), rnd.randint(0, k + 1), rnd) for _ in range(300)]
    probes += [rnd.getrandbits(64) for _ in range(100)]
    found = 0
    for fp in probes:
        expected = brute(stored, fp, k)
        found += len(expected)
        assert set(pairs.query(fp)) == expected
        assert set(banded.query(fp)) == expected
        within = {other for _key, other, _d in expected}
        assert within <= set(pairs.candidates(fp))
        assert within <= set(banded.candidates(fp))
    assert found > 300, "the probes must have neighbours within k to compare"
    assert BandLayout.decode(pairs.layout.keys(1)[0]) == (k + 2, 2)


@pytest.mark.parametrize("k", [2, 3])
def test_pairs_find_what_bands_and_brute_force_find_sqlite(sqlite_engine, k):
    _check_layouts_agree(*_layout_pair(sqlite_engine, None, k), k, seed=k)


@pytest.mark.postgres
@pytest.mark.parametrize("k", [2, 3])
def test_pairs_find_what_bands_and_brute_force_find_postgres(pg_engine, pg_schema, k):
    _check_layouts_agree(*_layout_pair(pg_engine, pg_schema, k), k, seed=10 + k)


def test_pairs_need_their_own_band_columns(sqlite_engine):
    SqlIndex(sqlite_engine, "structure", 3)  # 4 band columns: bands at k=3
    with pytest.raises(ValueError, match="band columns"):
        SqlIndex(sqlite_engine, "content", 3, layout="pairs")  # 10


@settings(max_examples=400, deadline=None)
@given(
    st.data(),
    st.integers(0, 64),
    st.one_of(st.none(), st.integers(1, 40)),
)
def test_scan_lookups_in_the_kernel_answer_as_python_does(data, k, limit):
    """The text kernel's lookup (``near_keys``) answers what the scan and Python's ranking
    answer: fingerprints near one another, several keys on one fingerprint, ties at the
    limit's distance, keys removed and replaced."""
    from visdup.index import memory

    if memory._kernel is None:
        pytest.skip("the compiled kernel is not built")
    rng = random.Random(data.draw(st.integers(0, 2**32)))
    base = rng.getrandbits(64)
    index = MemoryIndex(k=3, method="scan")
    fps = [base ^ sum(1 << b for b in rng.sample(range(64), rng.randrange(20))) for _ in range(30)]
    for key in rng.sample(range(-50, 10**6), 60):
        index.add(key, rng.choice(fps))
    for key in list(index._fp_of)[:5]:
        index.remove(key)
    query = rng.choice([base, rng.choice(fps), rng.getrandbits(64)])
    kernel = index._query(query, k, limit)
    saved, memory._kernel = memory._kernel, None
    try:
        assert kernel == index._query(query, k, limit)
    finally:
        memory._kernel = saved
    assert index.near(query, k, limit) == kernel


def test_scan_lookups_leave_keys_past_64_bits_to_python():
    index = MemoryIndex(k=3, method="scan")
    index.add(2**70, 5)
    index.add(3, 5 ^ 1)
    assert index._scan is not None
    assert index._scan.near_keys(5, 3, None, index._keys_of) is None
    assert index.near(5, 3) == [(2**70, 5, 0), (3, 4, 1)]
