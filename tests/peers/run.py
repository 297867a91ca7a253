#!/usr/bin/env python3
"""A schedule named after a peer's algorithm does what the peer's code does, in its order.

usage: run.py BINE_CC SOURCE_DIR

For the schedules of dsl/lib/openmpi.bine and dsl/lib/swing.bine, the messages of every rank
in every round of `bine-cc schedule --json` are compared with a transcription of the peer's
own C code (the functions named below, read from Open MPI 4.1/5.0 and the authors' libswing;
the loops are theirs, only MPI calls became tuples):

  neighbor_exchange_allgather  ompi_coll_base_allgather_intra_neighborexchange (even p; the
                               ring of ompi_coll_base_allgather_intra_ring for odd p)
  sparbit_allgather            ompi_coll_base_allgather_intra_sparbit
  ring_reduce_scatter          ompi_coll_base_reduce_scatter_intra_ring
  knomial_bcast                ompi_coll_base_topo_build_kmtree + the generic bcast
                               (children in tree_next order), radix 2..8, every root
  recexch_allreduce            MPICH MPII_Recexchalgo_get_neighbors + MPIR_Allreduce_intra_recexch
                               (single_phase_recv; k = 2..8; the receive order is the one
                               do_reduce combines in: lower neighbours nearest first)
  recexch_barrier              MPICH MPIR_Barrier_intra_recexch (recexch_allreduce's messages,
                               count 0; k = 2..8)
  k_dissemination_barrier      MPICH MPIR_Barrier_intra_k_dissemination (k = 2..8)
  scattered_alltoall           MPICH MPIR_Alltoall_intra_scattered (bblock 1..8)
  k_bruck_allgather            MPICH MPIR_Allgather_intra_k_brucks (k = 2..8; blocks as the
                               peer's tmp_recvbuf offsets); at k = 2 bruck_allgather's instance
  dsl/lib/openmpi_linear.bine  ompi_coll_base_{bcast,gather,scatter,reduce}_intra_basic_linear,
                               ompi_coll_base_barrier_intra_{basic_linear,doublering,tree},
                               ompi_coll_base_{scan,exscan}_intra_linear (every root sampled)
  dsl/lib/openmpi_segmented.bine  ompi_coll_base_topo_build_chain (fanout 1..8) and
                               ompi_coll_base_topo_build_tree(2) under the segmented
                               ompi_coll_base_bcast_intra_generic and
                               ompi_coll_base_reduce_generic (segments 1, 2, 3, 8 and fanout
                               1..8, four roots); in_order_binary_reduce over
                               ompi_coll_base_topo_build_in_order_bintree
  swing_*                      libswing compute_step_info + get_peer_c + getCoordFromId
                               (port 0, SWING_ALGO_FAMILY_SWING) on the torus shapes of
                               tests/peers/swing_shapes.bine; on one dimension the whole
                               instance equals the Bine butterfly schedule's
  bucket_*                     the Bucket algorithm (Barnett et al. 1993; Jain and Sabharwal
                               2010): a ring per torus dimension, each passing the buckets of
                               blocks named by their coordinates, on the shapes of
                               tests/peers/bucket_shapes.bine; on one dimension the ring
                               reduce-scatter's and ring allgather's messages

Each expected message is (kind, peer, blocks): kind "send" / "recv" / "recv_reduce", blocks a
tuple of block indices in the message's order. Data flow is the verifier's business; this
is about partners and order. Exits 1 naming the first difference.
"""
import json
import subprocess
import sys

BINE_CC, SRC = sys.argv[1], sys.argv[2]
import glob
LIB = sorted(glob.glob(SRC + "/dsl/lib/*.bine"))
SHAPES = SRC + "/tests/peers/swing_shapes.bine"
BUCKET_SHAPES = SRC + "/tests/peers/bucket_shapes.bine"
failures = 0


def instance(name, p, root=0, extra=()):
    out = subprocess.run([BINE_CC, "schedule", *LIB, *extra, "--schedule", name, "-p", str(p), "--root", str(root),
                          "--json"], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit("run.py: bine-cc schedule %s -p %d failed:\n%s" % (name, p, out.stderr))
    return json.loads(out.stdout)


def blocks_of(ranges):
    return tuple(b for lo, hi in ranges for b in range(lo, hi))


def got(inst):
    """Per rank, per round: the messages (kind, peer, blocks), in program order."""
    res = []
    for rounds in inst["ranks"]:
        rr = []
        for ops in rounds:
            rr.append([(("send" if o["op"] == "send" else o["op"].replace("recv_copy", "recv")), o["peer"],
                        blocks_of(o["blocks"])) for o in ops if o["op"] in ("send", "recv_copy", "recv_reduce")])
        res.append(rr)
    return res


def compare(what, expect, inst, scratch=False):
    """expect: per rank, a list of rounds, each a list of messages. Sends and receives are
    compared as two sequences per round (the schedule posts a round's sends first). With
    scratch, the receives' blocks are not compared (they land in scratch buffers, which the
    JSON numbers after the vector's blocks; where the data goes is the verifier's proof)."""
    global failures
    g = got(inst)
    if scratch:
        g = [[[(k, q, () if k.startswith("recv") else b) for k, q, b in m] for m in rr] for rr in g]
        expect = [[[(k, q, () if k.startswith("recv") else b) for k, q, b in m] for m in rr] for rr in expect]
    p = inst["p"]
    for x in range(p):
        er, gr = expect[x], g[x]
        # ranks without messages in trailing rounds
        while len(gr) > len(er) and not gr[-1]:
            gr = gr[:-1]
        while len(er) > len(gr) and not er[-1]:
            er = er[:-1]
        if len(er) != len(gr):
            print("FAIL %s p=%d rank %d: %d rounds, the peer's code has %d" % (what, p, x, len(gr), len(er)))
            failures += 1
            return
        for t, (e, h) in enumerate(zip(er, gr)):
            for kinds in (("send",), ("recv", "recv_reduce")):
                ee = [m for m in e if m[0] in kinds]
                hh = [m for m in h if m[0] in kinds]
                if ee != hh:
                    print("FAIL %s p=%d rank %d round %d: %s, the peer's code: %s" % (what, p, x, t, hh, ee))
                    failures += 1
                    return


def ring_allgather(p):
    # ompi_coll_base_allgather_intra_ring: step i sends block (r - i) to r + 1, receives r - i - 1
    return [[[("send", (r + 1) % p, ((r - i) % p,)), ("recv", (r - 1) % p, ((r - i - 1) % p,))]
             for i in range(p - 1)] for r in range(p)]


def neighbor_exchange(p):
    if p % 2:
        return ring_allgather(p)
    exp = []
    for rank in range(p):
        rounds = []
        even = rank % 2 == 0
        if even:
            neighbor = [(rank + 1) % p, (rank - 1 + p) % p]
            recv_data_from = [rank, rank]
            offset_at_step = [2, -2]
        else:
            neighbor = [(rank - 1 + p) % p, (rank + 1) % p]
            recv_data_from = [neighbor[0], neighbor[0]]
            offset_at_step = [-2, 2]
        rounds.append([("send", neighbor[0], (rank,)), ("recv", neighbor[0], (neighbor[0],))])
        send_data_from = rank if even else recv_data_from[0]
        for i in range(1, p // 2):
            par = i % 2
            recv_data_from[par] = (recv_data_from[par] + offset_at_step[par] + p) % p
            rounds.append([("send", neighbor[par], (send_data_from, send_data_from + 1)),
                           ("recv", neighbor[par], (recv_data_from[par], recv_data_from[par] + 1))])
            send_data_from = recv_data_from[par]
        exp.append(rounds)
    return exp


def sparbit(p):
    comm_log = (p - 1).bit_length()  # log_2(): ceil for non-powers of two
    exp = []
    for rank in range(p):
        rounds = []
        distance = 1 << (comm_log - 1) if comm_log > 0 else 0
        last_ignore = (p & -p).bit_length() - 1
        ignore_steps = ((~(p >> last_ignore) | 1) << last_ignore) & 0xFFFFFFFF
        data_expected = 1
        for _ in range(comm_log):
            sendto, recvfrom = (rank + distance) % p, (rank - distance + p) % p
            exclusion = 1 if (distance & ignore_steps) == distance else 0
            msgs = []
            for tc in range(data_expected - exclusion):
                send_disp = (rank - 2 * tc * distance + p) % p
                recv_disp = (rank - (2 * tc + 1) * distance + p) % p
                msgs += [("send", sendto, (send_disp,)), ("recv", recvfrom, (recv_disp,))]
            rounds.append(msgs)
            distance >>= 1
            data_expected = (data_expected << 1) - exclusion
        exp.append(rounds)
    return exp


def ring_reduce_scatter(p):
    exp = []
    for rank in range(p):
        if p == 1:
            exp.append([])
            continue
        send_to, recv_from = (rank + 1) % p, (rank + p - 1) % p
        # first receive posted for block r - 2 while block r - 1 (= recv_from's) is sent
        rounds = [[("send", send_to, (recv_from,)), ("recv_reduce", recv_from, ((rank + p - 2) % p,))]]
        for k in range(2, p):
            prevblock = (rank + p - k) % p
            rounds.append([("send", send_to, (prevblock,)), ("recv_reduce", recv_from, ((prevblock - 1) % p,))])
        exp.append(rounds)
    return exp


def kmtree(p, root, radix, rank):
    vrank = (rank - root + p) % p
    prev = None
    mask = 1
    while mask < p:
        if vrank % (radix * mask):
            prev = (vrank // (radix * mask) * (radix * mask) + root) % p
            break
        mask *= radix
    mask //= radix
    nxt = []
    while mask > 0:
        for j in range(1, radix):
            child = vrank + mask * j
            if child < p:
                nxt.append((child + root) % p)
        mask //= radix
    return prev, nxt


def knomial(p, root, radix):
    # the generic bcast: a rank receives from tree_prev, then posts a send to every
    # tree_next; in rounds, the depth of a rank in the tree is the round it sends in
    depth = {root: 0}
    order = [root]
    while order:
        x = order.pop(0)
        for c in kmtree(p, root, radix, x)[1]:
            depth[c] = depth[x] + 1
            order.append(c)
    levels = max(depth.values())
    exp = []
    for rank in range(p):
        prev, nxt = kmtree(p, root, radix, rank)
        rounds = [[] for _ in range(levels)]
        if prev is not None:
            rounds[depth[rank] - 1].append(("recv", prev, (0,)))
        for c in nxt:
            rounds[depth[rank]].append(("send", c, (0,)))
        exp.append(rounds)
    return exp


def ceil_log2(x):
    return (x - 1).bit_length()


def swing_steps(dims):
    # libswing compute_step_info(port 0)
    D = len(dims)
    nxt = [0] * D
    cur = 0
    total = sum(ceil_log2(d) for d in dims)
    info = []
    for i in range(total):
        info.append((cur, nxt[cur]))
        if nxt[cur] < ceil_log2(dims[cur]):
            nxt[cur] += 1
        if i != total - 1:
            while True:
                cur = (cur + 1) % D
                if nxt[cur] < ceil_log2(dims[cur]):
                    break
    return info


RHOS = [1, -1, 3, -5, 11, -21, 43, -85, 171, -341, 683, -1365, 2731, -5461, 10923, -21845]


def swing_peer(rank, step, dims, info):
    # getCoordFromId (row-major, coordinate 0 slowest), get_peer_c, getIdFromCoord
    coord, n = [], 1
    for d in dims:
        n *= d
    idv = rank
    for d in dims:
        n //= d
        coord.append(idv // n)
        idv %= n
    d, u = info[step]
    sign = -1 if coord[d] % 2 else 1
    coord[d] = (coord[d] + RHOS[u] * sign) % dims[d]
    r = 0
    for i, c in enumerate(coord):
        r = r * dims[i] + c
    return r


def swing_check(name, dims, reverse=False):
    p = dims[0] * dims[1] * dims[2]
    ref = [d for d in dims if d > 1]  # libswing's dimensions: those of size 1 are not among them
    info = swing_steps(ref)
    inst = instance("%s_%dx%dx%d" % ((name,) + dims), p, extra=(SHAPES,))
    g = got(inst)
    steps = list(range(len(info)))
    if name == "swing_allreduce_bdw":
        steps = steps + steps[::-1]
    elif reverse:
        steps = steps[::-1]
    global failures
    for x in range(p):
        rounds = [r for r in g[x] if r]
        if len(rounds) != len(steps):
            print("FAIL %s %s rank %d: %d rounds, libswing has %d steps" % (name, dims, x, len(rounds), len(steps)))
            failures += 1
            return
        for t, (msgs, s) in enumerate(zip(rounds, steps)):
            q = swing_peer(x, s, ref, info)
            if any(m[1] != q for m in msgs):
                print("FAIL %s %s rank %d round %d: peers %s, libswing's peer %d" % (name, dims, x, t, [m[1] for m in msgs], q))
                failures += 1
                return


def bucket(dims, kind):
    """The Bucket algorithm on a D0 x D1 x D2 torus, c0 slowest. A bucket of dimension e seen
    from rank x is the set of blocks whose coordinates before e are x's and whose coordinate e
    is v (blocks named by coordinates, enumerated: no range arithmetic). Reduce-scatter:
    dimensions 0, 1, 2; in ring step k a rank sends bucket c - 1 - k to its + neighbour and
    reduces bucket c - 2 - k from its - neighbour, so that it ends with bucket c summed over
    the ring. Allgather: dimensions 2, 1, 0; step k sends bucket c - k (the one it got in
    step k - 1, its own first) and receives bucket c - k - 1."""
    p = dims[0] * dims[1] * dims[2]

    def coords(x):
        return (x // (dims[1] * dims[2]), (x // dims[2]) % dims[1], x % dims[2])

    def rank_of(c):
        return (c[0] * dims[1] + c[1]) * dims[2] + c[2]

    def neighbour(x, e, k):
        c = list(coords(x))
        c[e] = (c[e] + k) % dims[e]
        return rank_of(c)

    def bucket_of(x, e, v):
        cx = coords(x)
        return tuple(b for b in range(p) if coords(b)[:e] == cx[:e] and coords(b)[e] == v % dims[e])

    def rs(x):
        rounds = []
        for e in range(3):
            c = coords(x)[e]
            for k in range(dims[e] - 1):
                rounds.append([("send", neighbour(x, e, 1), bucket_of(x, e, c - 1 - k)),
                               ("recv_reduce", neighbour(x, e, -1), bucket_of(x, e, c - 2 - k))])
        return rounds

    def ag(x):
        rounds = []
        for e in (2, 1, 0):
            c = coords(x)[e]
            for k in range(dims[e] - 1):
                rounds.append([("send", neighbour(x, e, 1), bucket_of(x, e, c - k)),
                               ("recv", neighbour(x, e, -1), bucket_of(x, e, c - k - 1))])
        return rounds

    return [(rs(x) if kind != "allgather" else []) + (ag(x) if kind != "reduce_scatter" else []) for x in range(p)]


def k_brucks(p, k):
    # MPIR_Allgather_intra_k_brucks, blocks as tmp_recvbuf positions (the schedule's JSON names
    # a message's blocks by their place in the buffer, which the rotation made the peer's
    # tmp_recvbuf: position t holds rank (rank + t)'s block); the
    # first and last rounds are the local rotations (MPICH's copy to the top of tmp_recvbuf and
    # its two copies back), without messages
    nphases, mx = 0, p - 1
    while mx:
        nphases += 1
        mx //= k
    p_of_k = k ** nphases == p
    exp = []
    for rank in range(p):
        rounds, delta = [[]], 1
        for i in range(nphases):
            msgs = []
            for j in range(1, k):
                if delta * j >= p:
                    break
                dst, src = (p + (rank - delta * j)) % p, (rank + delta * j) % p
                if i == nphases - 1 and not p_of_k:
                    count = delta
                    left = p - delta * j
                    count = left if j == k - 1 else min(count, left)
                else:
                    count = delta
                msgs.append(("recv", src, tuple(range(j * delta, j * delta + count))))
                msgs.append(("send", dst, tuple(range(count))))
            rounds.append(msgs)
            delta *= k
        exp.append(rounds + [[]])
    return exp


def k_brucks_alltoall(p, k):
    # MPIR_Alltoall_intra_k_brucks, blocks as recvbuf positions after step 1's rotation
    # (position o holds the item for rank + o): phase i sends, for each j = 1 .. k-1 with
    # delta j < size, the positions brucks_sched_pup packs (from delta j, delta consecutive
    # ones, then skip (k - 1) delta) to rank + delta j, and receives the same positions from
    # rank - delta j; the first and last rounds are the local rotations (steps 1 and 3)
    nphases, mx = 0, p - 1
    while mx:
        nphases += 1
        mx //= k
    exp = []
    for rank in range(p):
        rounds, delta = [[]], 1
        for i in range(nphases):
            msgs = []
            for j in range(1, k):
                if delta * j >= p:
                    break
                src, dst = (rank - delta * j + p) % p, (rank + delta * j) % p
                packed, offset, run = [], delta * j, delta
                while offset < p:
                    packed.append(offset)
                    offset += 1
                    run -= 1
                    if run == 0:
                        offset += (k - 1) * delta
                        run = delta
                msgs.append(("recv", src, tuple(packed)))
                msgs.append(("send", dst, tuple(packed)))
            rounds.append(msgs)
            delta *= k
        exp.append(rounds + [[]])
    return exp


def recursive_multiplying(p, k):
    # MPIR_Allreduce_intra_recursive_multiplying: the pre-stage (ranks >= pofk send to
    # rank % pofk, which receives from rank % pofk + pofk, + 2 pofk, ...), the main stage (per
    # distance, an Isend and an Irecv with every other member of the group, in member order)
    # and the post-stage, one round each (blocks 1: every message is block 0; the receives
    # land in tmp_buf, compared with scratch=True)
    pofk = 1
    while pofk * k <= p:
        pofk *= k
    exp = []
    for rank in range(p):
        rounds = []
        if pofk < p:
            if rank >= pofk:
                rounds.append([("send", rank % pofk, (0,))])
            else:
                rounds.append([("recv", src, (0,)) for src in range(rank % pofk + pofk, p, pofk)])
        distance, nxt = 1, k
        while distance < pofk:
            msgs = []
            if rank < pofk:
                start = rank // nxt * nxt
                for dst in range(start + rank % distance, start + nxt, distance):
                    if dst != rank:
                        msgs += [("send", dst, (0,)), ("recv", dst, (0,))]
            rounds.append(msgs)
            distance, nxt = nxt, nxt * k
        if pofk < p:
            if rank >= pofk:
                rounds.append([("recv", rank % pofk, (0,))])
            else:
                rounds.append([("send", dst, (0,)) for dst in range(rank % pofk + pofk, p, pofk)])
        exp.append(rounds)
    return exp


def recexch_neighbors(rank, nranks, k):
    # MPII_Recexchalgo_get_neighbors (src/mpi/coll/algorithms/recexchalgo/recexchalgo.c)
    if nranks < k:
        k = nranks if nranks > 2 else 2
    p_of_k, log_p_of_k = 1, 0
    while p_of_k <= nranks:
        p_of_k *= k
        log_p_of_k += 1
    p_of_k //= k
    log_p_of_k -= 1
    rem = nranks - p_of_k
    T = rem * k // (k - 1)
    sendto, recvfrom = -1, []
    if rank < T:
        if rank % k != k - 1:
            sendto = rank + (k - 1 - rank % k)
            if sendto > T - 1:
                sendto = T
            newrank = -1
        else:
            recvfrom = [rank - i - 1 for i in range(k - 1)]
            newrank = rank // k
    else:
        newrank = rank - rem
        if rank == T and (T - 1) % k != k - 1 and T >= 1:
            nsenders = (T - 1) % k + 1
            recvfrom = [T - nsenders + j for j in range(nsenders - 1, -1, -1)]
    nbrs = []
    if sendto == -1:
        digit = [0] * log_p_of_k
        t, idx = newrank, 0
        while t:
            digit[idx] = t % k
            t //= k
            idx += 1
        for phase in range(log_p_of_k):
            cbit, row = digit[phase], []
            for i in range(k):
                if i != cbit:
                    digit[phase] = i
                    nbr, power = 0, 1
                    for j in range(log_p_of_k):
                        nbr += digit[j] * power
                        power *= k
                    row.append(nbr * k + (k - 1) if nbr < rem // (k - 1) else nbr + rem)
            digit[phase] = cbit
            nbrs.append(row)
    return sendto, recvfrom, nbrs


def recexch_allreduce(p, k):
    # MPIR_Allreduce_intra_recexch: step 1, one round per phase of step 2 (every neighbour's
    # vector received, then combined by do_reduce in rank order around find_myidx), step 3
    exp = []
    rem = any(recexch_neighbors(x, p, k)[0] >= 0 for x in range(p))
    for rank in range(p):
        if p == 1:
            exp.append([])
            continue
        sendto, recvfrom, nbrs = recexch_neighbors(rank, p, k)
        rounds = []
        if rem:
            rounds.append([("send", sendto, (0,))] if sendto >= 0 else [("recv_reduce", q, (0,)) for q in recvfrom])
        nph = len(recexch_neighbors(p - 1, p, k)[2])
        for ph in range(nph):
            if sendto >= 0:
                rounds.append([])
                continue
            row = nbrs[ph]
            myidx = next((i for i, q in enumerate(row) if q > rank), len(row))
            order = row[:myidx][::-1] + row[myidx:]
            rounds.append([m for q in order for m in (("send", q, (0,)), ("recv_reduce", q, (0,)))])
        if rem:
            rounds.append([("recv", sendto, (0,))] if sendto >= 0 else [("send", q, (0,)) for q in recvfrom])
        exp.append(rounds)
    return exp


def recexch_count_offset(rank, phase, k, nranks):
    # MPII_Recexchalgo_get_count_and_offset: (count, offset) of the original ranks that
    # rank's step-2 rank represents in phase `phase`
    p_of_k = 1
    while p_of_k <= nranks:
        p_of_k *= k
    p_of_k //= k
    rem = nranks - p_of_k
    T = rem * k // (k - 1)
    kp = k ** phase
    step2rank = rank // k if rank < T else rank - rem
    mn = step2rank // kp * kp - 1
    mx = mn + kp
    orig = lambda y: y * k + (k - 1) if y < rem // (k - 1) else y + rem
    omin = orig(mn) if mn >= 0 else mn
    return orig(mx) - omin, omin + 1


def recexch_allgather(p, k, halving=False):
    # MPIR_Allgather_intra_recexch: step 1 (own block to step1_sendto; the receiver's blocks
    # from step1_recvfrom); with recexch_type 1 (halving) the Sendrecv of the phase-0 ranges
    # with the digit-reversed partner; in iteration j the receives from step2_nbrs[j] (type 0)
    # or step2_nbrs[nphases - 1 - j] (type 1) at the count and offset of the neighbour (its
    # digit-reversed rank for type 1) and the sends of the rank's own (digit-reversed) range;
    # step 3 (the whole vector back)
    exp = []
    kl = k if p >= k else (p if p > 2 else 2)  # get_neighbors lowers k (and the function uses it)
    rem = any(recexch_neighbors(x, p, k)[0] >= 0 for x in range(p))
    nph = len(recexch_neighbors(p - 1, p, k)[2]) if p > 1 else 0
    for_offset = (lambda x: recexch_reverse(x, p, kl)) if halving else (lambda x: x)

    def rng(x, ph):
        c, o = recexch_count_offset(x, ph, kl, p)
        return tuple(range(o, o + c))
    for rank in range(p):
        if p == 1:
            exp.append([])
            continue
        sendto, recvfrom, nbrs = recexch_neighbors(rank, p, k)
        rounds = []
        if rem:
            rounds.append([("send", sendto, (rank,))] if sendto >= 0 else [("recv", q, (q,)) for q in recvfrom])
        if halving and nph > 1:
            partner = recexch_reverse(rank, p, kl) if sendto < 0 else rank
            rounds.append([("send", partner, rng(rank, 0)), ("recv", partner, rng(partner, 0))] if partner != rank else [])
        for j in range(nph):
            if sendto >= 0:
                rounds.append([])
                continue
            row = nbrs[nph - 1 - j] if halving else nbrs[j]
            msgs = [("recv", q, rng(for_offset(q), j)) for q in row]
            msgs += [("send", q, rng(for_offset(rank), j)) for q in row]
            rounds.append(msgs)
        if rem:
            every = tuple(range(p))
            rounds.append([("recv", sendto, every)] if sendto >= 0 else [("send", q, every) for q in recvfrom])
        exp.append(rounds)
    return exp


def recexch_reverse(rank, nranks, k):
    # MPII_Recexchalgo_reverse_digits_step2
    pofk, log = 1, 0
    while pofk <= nranks:
        pofk *= k
        log += 1
    pofk //= k
    log -= 1
    rem = nranks - pofk
    T = rem * k // (k - 1)
    s2 = rank // k if rank < T else rank - rem
    digit, idx = [0] * log, 0
    while s2:
        digit[idx] = s2 % k
        s2 //= k
        idx += 1
    rev = sum(digit[log - 1 - i] * k ** i for i in range(log))
    return rev * k + (k - 1) if rev < rem // (k - 1) else rev + rem


def k_rsag_allreduce(p, k):
    # MPIR_Allreduce_intra_k_reduce_scatter_allgather: step 1 (whole vectors to step1_sendto,
    # reduced), the reduce-scatter (phase 0 .. n-1, j = n-1-phase: per neighbour of
    # step2_nbrs[phase] in order, an Isend of the range of reverse(dst) at j and an Irecv of the
    # rank's own reverse range, then a Waitall: one exchange at a time), the allgather (as
    # the distance-halving allgather) and step 3. Blocks: the vector is split over the p_of_k
    # step-2 ranks (MPICH's cnts / displs), block y = step-2 rank y; an original-rank range of
    # get_count_and_offset is the blocks of the step-2 ranks inside it. The round of a
    # reduce-scatter exchange: within its phase, the earliest slot at which both ranks have
    # done their earlier exchanges (found by simulating every rank's queue), 2k - 3 slots.
    if p == 1:
        return [[]]
    kl = k if p >= k else (p if p > 2 else 2)
    info = [recexch_neighbors(x, p, k) for x in range(p)]
    rem_any = any(i[0] >= 0 for i in info)
    nph = len(info[p - 1][2])
    p_of_k = kl ** nph
    rem = p - p_of_k
    T = rem * kl // (kl - 1)
    step2 = lambda x: x // kl if x < T else x - rem

    def blocks(x, ph):
        c, o = recexch_count_offset(x, ph, kl, p)
        return tuple(step2(y) for y in range(o, o + c) if info[y][0] < 0)
    rs = [[[] for _ in range(nph * (2 * kl - 3))] for _ in range(p)]
    for ph in range(nph):
        j = nph - 1 - ph
        queue = {x: list(info[x][2][ph]) for x in range(p) if info[x][0] < 0}
        slot = 0
        while any(queue.values()):
            pairs = [(x, q[0]) for x, q in queue.items() if q and queue[q[0]] and queue[q[0]][0] == x and x < q[0]]
            for x, y in pairs:
                for a, b in ((x, y), (y, x)):
                    rs[a][ph * (2 * kl - 3) + slot] += [("send", b, blocks(recexch_reverse(b, p, kl), j)),
                                                        ("recv_reduce", b, blocks(recexch_reverse(a, p, kl), j))]
                    queue[a].pop(0)
            slot += 1
    exp = []
    every_blk = tuple(range(p_of_k))
    for rank in range(p):
        sendto, recvfrom, nbrs = info[rank]
        rounds = []
        if rem_any:
            rounds.append([("send", sendto, every_blk)] if sendto >= 0 else [("recv_reduce", q, every_blk) for q in recvfrom])
        rounds += rs[rank]
        for jj in range(nph):
            if sendto >= 0:
                rounds.append([])
                continue
            row = nbrs[nph - 1 - jj]
            msgs = [("recv", q, blocks(recexch_reverse(q, p, kl), jj)) for q in row]
            msgs += [("send", q, blocks(recexch_reverse(rank, p, kl), jj)) for q in row]
            rounds.append(msgs)
        if rem_any:
            rounds.append([("recv", sendto, every_blk)] if sendto >= 0 else [("send", q, every_blk) for q in recvfrom])
        exp.append(rounds)
    return exp


def k_dissemination(p, k):
    # MPIR_Barrier_intra_k_dissemination (k = 2: MPIR_Barrier_intra_dissemination); a
    # message to the rank itself (j * shift a multiple of p) is not in the schedule
    exp = []
    if p < k:
        k = p
    for rank in range(p):
        rounds, p_of_k, shift = [], 1, 1
        while p_of_k < p:
            p_of_k *= k
            msgs = []
            for j in range(1, k):
                if (j * shift) % p:
                    msgs += [("send", (rank + j * shift) % p, ()), ("recv", (rank - j * shift) % p, ())]
            rounds.append(msgs)
            shift *= k
        exp.append(rounds)
    return exp


def linear_rooted(p, root, kind):
    # bcast / scatter basic_linear: the root's sends in rank order; gather: its receives
    exp = []
    for rank in range(p):
        if rank == root:
            msgs = [(("recv" if kind == "gather" else "send"), i, ((0,) if kind == "bcast" else (i,)))
                    for i in range(p) if i != root]
        else:
            msgs = [(("send" if kind == "gather" else "recv"), root, ((0,) if kind == "bcast" else (rank,)))]
        exp.append([msgs] if p > 1 else [])
    return exp


def linear_reduce(p, root):
    # ompi_coll_base_reduce_intra_basic_linear: the root's blocking receives from p-1 down to 0
    order = [i for i in range(p - 1, -1, -1) if i != root]
    exp = []
    for rank in range(p):
        rounds = []
        for s in order:
            if rank == root:
                rounds.append([("recv", s, (0,))])
            else:
                rounds.append([("send", root, (0,))] if rank == s else [])
        exp.append(rounds)
    return exp


def linear_barrier(p):
    exp = []
    for rank in range(p):
        if p == 1:
            exp.append([])
        elif rank == 0:
            exp.append([[("recv", i, ()) for i in range(1, p)], [("send", i, ()) for i in range(1, p)]])
        else:
            exp.append([[("send", 0, ())], [("recv", 0, ())]])
    return exp


def double_ring(p):
    # ompi_coll_base_barrier_intra_doublering: the token from rank 0 around twice (blocking
    # receive from the left, then send to the right: one message a round)
    exp = [[] for _ in range(p)]
    if p == 1:
        return exp
    for lap in range(2):
        for t in range(p):
            for rank in range(p):
                m = []
                if rank == t:
                    m.append(("send", (rank + 1) % p, ()))
                if rank == (t + 1) % p:
                    m.append(("recv", (rank - 1) % p, ()))
                exp[rank].append(m)
    return exp


def tree_barrier(p):
    # ompi_coll_base_barrier_intra_tree
    depth = 1
    while depth < p:
        depth <<= 1
    exp = []
    for rank in range(p):
        rounds = []
        jump = 1
        while jump < depth:
            partner = rank ^ jump
            m = []
            if not (partner & (jump - 1)) and partner < p:
                m = [("recv", partner, ())] if partner > rank else [("send", partner, ())]
            rounds.append(m)
            jump <<= 1
        jump = depth >> 1
        while jump > 0:
            partner = rank ^ jump
            m = []
            if not (partner & (jump - 1)) and partner < p:
                m = [("send", partner, ())] if partner > rank else [("recv", partner, ())]
            rounds.append(m)
            jump >>= 1
        exp.append(rounds)
    return exp


def linear_chain(p, reduce):
    # ompi_coll_base_scan_intra_linear (the receive reduces), _exscan_intra_linear (it does not)
    exp = [[] for _ in range(p)]
    for t in range(p - 1):
        for rank in range(p):
            m = []
            if rank == t:
                m.append(("send", t + 1, (0,)))
            if rank == t + 1:
                m.append(("recv_reduce" if reduce else "recv", t, (0,)))
            exp[rank].append(m)
    return exp


def build_tree2(p, root, rank):
    # ompi_coll_base_topo_build_tree(fanout 2): children, then parent
    fanout = 2
    def pown(n):
        return fanout ** n if n >= 0 else 0
    def level_of(x):
        lv, num = 0, 0
        while num <= x:
            num += pown(lv)
            lv += 1
        return lv - 1
    if p < 2:
        return None, []
    sr = (rank - root) % p
    lv = level_of(sr)
    delta = pown(lv)
    nxt = []
    for i in range(fanout):
        sc = sr + delta * (i + 1)
        if sc < p:
            nxt.append((sc + root) % p)
        else:
            break
    slimit = (pown(lv) - 1) // (fanout - 1)
    sp = sr
    if sp < fanout:
        sp = 0
    else:
        while sp >= slimit:
            sp -= delta // fanout
    return (None if sr == 0 else (sp + root) % p), nxt


def build_chain(p, root, rank, fanout):
    # ompi_coll_base_topo_build_chain
    if p - 1 < fanout:
        fanout = p - 1
    sr = (rank - root) % p
    if fanout == 1:
        prev = None if sr == 0 else (sr - 1 + root) % p
        nxt = [] if sr + 1 >= p else [(sr + 1 + root) % p]
        return prev, nxt
    if p == 1:
        return None, []
    L = (p - 1) // fanout
    if (p - 1) % fanout:
        L += 1
        mark = (p - 1) % fanout
    else:
        mark = fanout + 1
    if sr != 0:
        if sr - 1 < mark * L:
            column = (sr - 1) // L
            head, ln = 1 + column * L, L
        else:
            column = mark + (sr - 1 - mark * L) // (L - 1)
            head, ln = mark * L + 1 + (column - mark) * (L - 1), L - 1
        prev = 0 if sr == head else sr - 1
        nxt = [] if sr == head + ln - 1 or sr + 1 >= p else [(sr + 1 + root) % p]
        return (prev + root) % p, nxt
    nxt = [(root + 1) % p]
    for i in range(1, fanout):
        x = nxt[-1] + L
        if i > mark:
            x -= 1
        nxt.append(x % p)
    return None, nxt


def segmented_bcast(p, root, segments, tree):
    # ompi_coll_base_bcast_intra_generic: the root sends each segment to all its children;
    # an inner rank receives segment s + 1 while it sends segment s; a leaf receives them all
    depth = {root: 0}
    order = [root]
    while order:
        x = order.pop(0)
        for c in tree(x)[1]:
            depth[c] = depth[x] + 1
            order.append(c)
    nrounds = (max(depth.values()) + segments - 1) if p > 1 else 0
    exp = []
    for rank in range(p):
        prev, nxt = tree(rank)
        rounds = [[] for _ in range(nrounds)]
        for sg in range(segments):
            for c in nxt:
                rounds[depth[rank] + sg].append(("send", c, (sg,)))
            if prev is not None:
                rounds[depth[rank] - 1 + sg].append(("recv", prev, (sg,)))
        exp.append(rounds)
    return exp


def segmented_reduce(p, root, segments, tree):
    # ompi_coll_base_reduce_generic: a leaf sends its segments one after the other; an inner
    # rank receives segment s from each child in tree_next order, then sends it on. A rank
    # sends segment s in round height + s; its parent receives it in that round.
    height = {}
    def h(x):
        if x not in height:
            height[x] = 1 + max((h(c) for c in tree(x)[1]), default=-1)
        return height[x]
    nrounds = (h(root) + segments - 1) if p > 1 else 0
    exp = []
    for rank in range(p):
        prev, nxt = tree(rank)
        rounds = [[] for _ in range(nrounds)]
        for sg in range(segments):
            if prev is not None:
                rounds[h(rank) + sg].append(("send", prev, (sg,)))
            for c in nxt:
                rounds[h(c) + sg].append(("recv_reduce", c, (sg,)))
        exp.append(rounds)
    return exp


def scattered(p, bblock):
    # MPIR_Alltoall_intra_scattered: batch ii receives from r + i + ii and sends to
    # r - i - ii (i < ss); the own block is a local copy. The receive lands in the slot of the
    # block sent to r - d in the same batch (the schedule's one buffer; the final permutation
    # puts it at r + d, where the peer's separate receive buffer has it)
    exp = []
    for rank in range(p):
        rounds = []
        ii = 0
        while ii < p:
            ss = min(bblock, p - ii)
            recvs = [("recv", (rank + i + ii) % p, ((rank - i - ii) % p,)) for i in range(ss) if i + ii]
            sends = [("send", (rank - i - ii) % p, ((rank - i - ii) % p,)) for i in range(ss) if i + ii]
            if recvs or ii:
                rounds.append(recvs + sends)
            ii += bblock
        exp.append(rounds if p > 1 else [])
    return exp


def build_in_order_bintree(p, rank):
    # ompi_coll_base_topo_build_in_order_bintree: (prev, [next0, next1])
    size, myrank, parent, delta = p, rank, p - 1, 0
    prev, nxt = None, []
    while True:
        rightsize = size >> 1
        lchild = rchild = -1
        if size - 1 > 0:
            lchild = parent - 1
            if lchild > 0:
                rchild = rightsize - 1
        if myrank == parent:
            nxt = [c + delta for c in (lchild, rchild) if c >= 0]
            break
        if myrank > rchild:
            if myrank == lchild:
                prev = parent + delta
            size = size - rightsize - 1
            delta += rightsize
            myrank -= rightsize
            parent = size - 1
        else:
            if myrank == rchild:
                prev = parent + delta
            size = rightsize
            parent = rchild
    return prev, nxt


def in_order_reduce(p, root, segments):
    # ompi_coll_base_reduce_intra_in_order_binary: the generic reduce to io_root = p - 1, then
    # (root != p - 1) one message of the whole vector from p - 1 to the root
    exp = segmented_reduce(p, p - 1, segments, lambda x: build_in_order_bintree(p, x))
    if root != p - 1 and p > 1:
        for rank in range(p):
            m = []
            if rank == p - 1:
                m = [("send", root, tuple(range(segments)))]
            elif rank == root:
                m = [("recv", p - 1, tuple(range(segments)))]
            exp[rank].append(m)
    return exp


checked = 0
for p in list(range(1, 21)) + [32, 33]:
    compare("neighbor_exchange_allgather", neighbor_exchange(p), instance("neighbor_exchange_allgather", p))
    compare("sparbit_allgather", sparbit(p), instance("sparbit_allgather", p))
    compare("ring_reduce_scatter", ring_reduce_scatter(p), instance("ring_reduce_scatter", p))
    checked += 3
radix_file = SRC + "/tests/schedules/radix.bine"
for radix in range(2, 9):
    for p in (1, 2, 5, 10, 16, 27, 33):
        for root in sorted({0, 1 % p, p // 2, p - 1}):
            inst = instance("knomial_bcast_radix_%d" % radix, p, root, extra=(radix_file,))
            compare("knomial_bcast radix %d root %d" % (radix, root), knomial(p, root, radix), inst)
            checked += 1
for p in list(range(1, 18)) + [32, 33]:
    for root in sorted({0, 1 % p, p // 2, p - 1}):
        for kind in ("bcast", "gather", "scatter"):
            compare("linear_%s root %d" % (kind, root), linear_rooted(p, root, kind), instance("linear_" + kind, p, root))
        compare("linear_reduce root %d" % root, linear_reduce(p, root), instance("linear_reduce", p, root), scratch=True)
        checked += 4
    # allreduce basic_linear: the linear reduce to 0, then the linear bcast from 0
    ar = [rr + [m[0] for m in linear_rooted(p, 0, "bcast")[x:x + 1] if m] for x, rr in enumerate(linear_reduce(p, 0))]
    compare("linear_allreduce", ar, instance("linear_allreduce", p), scratch=True)
    compare("linear_barrier", linear_barrier(p), instance("linear_barrier", p))
    compare("double_ring_barrier", double_ring(p), instance("double_ring_barrier", p))
    compare("tree_barrier", tree_barrier(p), instance("tree_barrier", p))
    compare("linear_scan", linear_chain(p, True), instance("linear_scan", p))
    compare("linear_exscan", linear_chain(p, False), instance("linear_exscan", p), scratch=True)
    checked += 6
for p in (1, 2, 3, 5, 8, 13, 16, 21, 33):
    for root in sorted({0, 1 % p, p // 2, p - 1}):
        for sg in (1, 2, 3, 8):
            compare("pipeline_bcast segments %d root %d" % (sg, root),
                    segmented_bcast(p, root, sg, lambda x: build_chain(p, root, x, 1)),
                    instance("pipeline_bcast_s_%d" % sg, p, root, extra=(radix_file,)))
            compare("binary_tree_bcast segments %d root %d" % (sg, root),
                    segmented_bcast(p, root, sg, lambda x: build_tree2(p, root, x)),
                    instance("binary_tree_bcast_s_%d" % sg, p, root, extra=(radix_file,)))
            compare("chain_bcast fanout 4 segments %d root %d" % (sg, root),
                    segmented_bcast(p, root, sg, lambda x: build_chain(p, root, x, 4)),
                    instance("chain_bcast_s_%d" % sg, p, root, extra=(radix_file,)))
            compare("pipeline_reduce segments %d root %d" % (sg, root),
                    segmented_reduce(p, root, sg, lambda x: build_chain(p, root, x, 1)),
                    instance("pipeline_reduce_s_%d" % sg, p, root, extra=(radix_file,)))
            compare("binary_reduce segments %d root %d" % (sg, root),
                    segmented_reduce(p, root, sg, lambda x: build_tree2(p, root, x)),
                    instance("binary_reduce_s_%d" % sg, p, root, extra=(radix_file,)))
            compare("chain_reduce fanout 4 segments %d root %d" % (sg, root),
                    segmented_reduce(p, root, sg, lambda x: build_chain(p, root, x, 4)),
                    instance("chain_reduce_s_%d" % sg, p, root, extra=(radix_file,)))
            compare("in_order_binary_reduce segments %d root %d" % (sg, root), in_order_reduce(p, root, sg),
                    instance("in_order_binary_reduce_s_%d" % sg, p, root, extra=(radix_file,)))
            checked += 7
        for fo in range(1, 9):
            compare("chain_bcast fanout %d root %d" % (fo, root),
                    segmented_bcast(p, root, 3, lambda x: build_chain(p, root, x, fo)),
                    instance("chain_bcast_f_%d" % fo, p, root, extra=(radix_file,)))
            compare("chain_reduce fanout %d root %d" % (fo, root),
                    segmented_reduce(p, root, 3, lambda x: build_chain(p, root, x, fo)),
                    instance("chain_reduce_f_%d" % fo, p, root, extra=(radix_file,)))
            checked += 2
for k in range(2, 9):
    for p in list(range(1, 21)) + [27, 32, 33, 49, 64]:
        compare("recexch_allreduce k %d" % k, recexch_allreduce(p, k),
                instance("recexch_allreduce_k_%d" % k, p, extra=(radix_file,)))
        bar = [[[(kd, q, ()) for kd, q, b in m] for m in rr] for rr in recexch_allreduce(p, k)]
        bar = [[[(kd.replace("recv_reduce", "recv"), q, b) for kd, q, b in m] for m in rr] for rr in bar]
        compare("recexch_barrier k %d" % k, bar, instance("recexch_barrier_k_%d" % k, p, extra=(radix_file,)))
        compare("k_dissemination_barrier k %d" % k, k_dissemination(p, k),
                instance("k_dissemination_barrier_k_%d" % k, p, extra=(radix_file,)))
        compare("recexch_allgather k %d" % k, recexch_allgather(p, k),
                instance("recexch_allgather_k_%d" % k, p, extra=(radix_file,)))
        compare("recexch_halving_allgather k %d" % k, recexch_allgather(p, k, halving=True),
                instance("recexch_halving_allgather_k_%d" % k, p, extra=(radix_file,)))
        compare("k_reduce_scatter_allgather_allreduce k %d" % k, k_rsag_allreduce(p, k),
                instance("k_reduce_scatter_allgather_allreduce_k_%d" % k, p, extra=(radix_file,)))
        checked += 6
for k in range(2, 9):
    for p in list(range(1, 18)) + [25, 27, 32, 49, 64, 65]:
        compare("k_bruck_allgather k %d" % k, k_brucks(p, k),
                instance("k_bruck_allgather_k_%d" % k, p, extra=(radix_file,)))
        checked += 1
for k in range(2, 9):
    for p in list(range(1, 18)) + [25, 27, 32, 49, 64, 65]:
        compare("recursive_multiplying_allreduce k %d" % k, recursive_multiplying(p, k),
                instance("recursive_multiplying_allreduce_k_%d" % k, p, extra=(radix_file,)), scratch=True)
        compare("k_bruck_alltoall k %d" % k, k_brucks_alltoall(p, k),
                instance("k_bruck_alltoall_k_%d" % k, p, extra=(radix_file,)))
        checked += 2
for p in (1, 2, 3, 5, 8, 13, 33):
    def by_kind(inst):  # per round, the sends and then the receives (their order within a kind kept)
        return [[sorted(rr, key=lambda m: m[0] != "send") for rr in x] for x in got(inst)]
    if by_kind(instance("k_bruck_allgather", p)) != by_kind(instance("bruck_allgather", p)):
        print("FAIL k_bruck_allgather at k = 2, p=%d: not bruck_allgather's instance" % p)
        failures += 1
    if by_kind(instance("k_bruck_alltoall", p)) != by_kind(instance("bruck_alltoall", p)):
        print("FAIL k_bruck_alltoall at k = 2, p=%d: not bruck_alltoall's instance" % p)
        failures += 1
    checked += 2
for bblock in range(1, 9):
    for p in (1, 2, 3, 5, 8, 9, 16, 17, 33):
        compare("scattered_alltoall bblock %d" % bblock, scattered(p, bblock),
                instance("scattered_alltoall_b_%d" % bblock, p, extra=(radix_file,)))
        checked += 1
for dims in [(2, 2, 2), (4, 2, 1), (1, 8, 2), (2, 4, 8), (4, 4, 4), (8, 1, 1), (16, 1, 1)]:
    for name, rev in (("swing_allreduce_lat", False), ("swing_reduce_scatter", False), ("swing_allgather", True),
                      ("swing_allreduce_bdw", False)):
        swing_check(name, dims, rev)
        checked += 1
# One dimension: Swing's partner and windows are the Bine butterfly's, so the instances are equal.
for name, bine in (("swing_allreduce_lat", "bine_allreduce_lat"), ("swing_reduce_scatter", "bine_reduce_scatter"),
                   ("swing_allgather", "bine_allgather")):
    for d in (8, 16):
        a = got(instance("%s_%dx1x1" % (name, d), d, extra=(SHAPES,)))
        b = got(instance(bine, d))
        checked += 1
        if a != b:
            print("FAIL %s on %dx1x1: not the instance of %s" % (name, d, bine))
            failures += 1
for dims in [(2, 3, 4), (4, 3, 2), (1, 8, 2), (3, 1, 5), (5, 3, 1), (1, 1, 7), (7, 1, 1), (2, 2, 2), (4, 4, 4), (1, 4, 1)]:
    p = dims[0] * dims[1] * dims[2]
    for kind in ("reduce_scatter", "allgather", "allreduce"):
        compare("bucket_%s %dx%dx%d" % ((kind,) + dims), bucket(dims, kind),
                instance("bucket_%s_%dx%dx%d" % ((kind,) + dims), p, extra=(BUCKET_SHAPES,)))
        checked += 1
# The default shape (the most nearly cubic), and one dimension: the ring reduce-scatter and allgather.
for p, dims in ((8, (2, 2, 2)), (12, (3, 2, 2)), (16, (4, 2, 2)), (7, (7, 1, 1)), (30, (5, 3, 2)), (64, (4, 4, 4)),
                (96, (6, 4, 4))):
    for kind in ("reduce_scatter", "allgather", "allreduce"):
        compare("bucket_%s default shape at p=%d" % (kind, p), bucket(dims, kind), instance("bucket_" + kind, p))
        checked += 1
for p in (2, 5, 7, 11):
    compare("bucket_reduce_scatter on %dx1x1" % p, ring_reduce_scatter(p), instance("bucket_reduce_scatter", p))
    compare("bucket_allgather on %dx1x1" % p, ring_allgather(p), instance("bucket_allgather", p))
    checked += 2
# Open MPI's compositions (dsl/lib/openmpi_composed.bine: the peer calls its own reduce /
# gather, then its scatter / bcast, to and from rank 0): every rank's messages are the first
# part's instance at root 0, then the second's, each instantiated alone with its own block
# count and its block j mapped to the caller's blocks [j B/b, (j+1) B/b).
def composed(p, parts, blocks):
    out = [[] for _ in range(p)]
    for name in parts:
        part = instance(name, p, 0)
        k = blocks // part["blocks"]
        for x, rounds in enumerate(got(part)):
            out[x] += [[(kd, q, tuple(c for b in bs for c in range(b * k, (b + 1) * k))) for kd, q, bs in m] for m in rounds]
    return out


for name, parts, nblocks in (("reduce_bcast_allreduce", ("binomial_reduce", "binomial_bcast_doubling"), lambda p: 1),
                             ("reduce_then_scatter", ("binomial_reduce", "binomial_scatter"), lambda p: p),
                             ("gather_bcast_allgather", ("binomial_gather", "binomial_bcast_doubling"), lambda p: p)):
    for p in (1, 2, 3, 5, 8, 12, 17, 32):
        inst = instance(name, p)
        if inst["blocks"] != nblocks(p):
            print("FAIL %s p=%d: %d blocks, expected %d" % (name, p, inst["blocks"], nblocks(p)))
            failures += 1
        compare(name, composed(p, parts, inst["blocks"]), inst)
        checked += 1
print("peers: %d instances compared with the peers' code, %d failures" % (checked, failures))
sys.exit(1 if failures else 0)
