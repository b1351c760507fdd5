#!/bin/sh
# Chakra execution traces in and out (docs/chakra.md). Usage:
#   chakra_tests.sh PATH/TO/dtsim PATH/TO/chakra_gen PATH/TO/et_def.proto
# Each check prints one line; the last line counts passes and failures.
DTSIM=${1:?usage: chakra_tests.sh DTSIM CHAKRA_GEN PROTO}
GEN=${2:?usage: chakra_tests.sh DTSIM CHAKRA_GEN PROTO}
PROTO=${3:?usage: chakra_tests.sh DTSIM CHAKRA_GEN PROTO}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
pass=0
fail=0

. "$(dirname "$0")/lib.sh"

# expect_error NAME PATTERN ARGS... : status 2, one line on stderr naming PATTERN, no stdout
expect_error() {
  name=$1; pattern=$2; shift 2
  "$DTSIM" "$@" >"$TMP/out" 2>"$TMP/err"
  got=$?
  lines=$(wc -l <"$TMP/err")
  if [ "$got" -eq 2 ] && [ "$lines" -eq 1 ] && [ ! -s "$TMP/out" ] && grep -q -- "$pattern" "$TMP/err"; then
    ok "$name ($(cat "$TMP/err"))"
  else
    bad "$name: status $got, $lines stderr lines, want '$pattern': $(cat "$TMP/err") $(head -c 200 "$TMP/out")"
  fi
}

# --- round trip: a strategy's job written out, read back, the same iteration time (1%) -------
# roundtrip NAME CLUSTER-ARGS -- JOB-ARGS
roundtrip() {
  name=$1; cluster=$2; shift 2
  dir="$TMP/rt-$name"
  # shellcheck disable=SC2086
  a=$("$DTSIM" run $cluster "$@" --json --chakra-out "$dir" 2>"$TMP/err" | json_num iteration_time_s)
  # shellcheck disable=SC2086
  b=$("$DTSIM" run $cluster --chakra "$dir" --json 2>>"$TMP/err" | json_num iteration_time_s)
  if [ -n "$a" ] && [ -n "$b" ] && near "$b" "$a" 0.01; then
    ok "round trip $name ($a s out, $b s back in)"
  else
    bad "round trip $name: '$a' out, '$b' back in: $(cat "$TMP/err")"
  fi
}
roundtrip dp "--nodes 2 --devices-per-node 4" --strategy dp
roundtrip dp-unfolded "--nodes 2 --devices-per-node 4" --strategy dp --symmetry off --overlap off
roundtrip pp-1f1b "--nodes 1 --devices-per-node 4" --strategy pp --micro-batches 8
roundtrip pp-gpipe "--nodes 2 --devices-per-node 4" --strategy pp --micro-batches 4 --schedule gpipe
roundtrip hybrid "--nodes 2 --devices-per-node 4" --strategy hybrid --stages 2 --micro-batches 4
roundtrip 3d "--system dgx-a100 --nodes 2" --strategy 3d --model gpt3-1.7b --tp 2 --pp 2 --global-batch 32 --micro-batch 2
roundtrip 3d-sp-zero1 "--system dgx-a100 --nodes 2" --strategy 3d --model gpt3-1.7b --tp 4 --pp 2 --global-batch 16 --micro-batch 1 --sequence-parallel on --zero 1
roundtrip 3d-interleaved "--system dgx-a100 --nodes 2" --strategy 3d --model gpt3-1.7b --tp 2 --pp 2 --global-batch 16 --micro-batch 1 --schedule interleaved --interleave 2
# The frontier forms: expert parallelism (dispatch and combine all-to-alls over groups of 8, which
# the reader runs direct when the trace names the ring) and blocks that do not divide the
# stages (32 blocks on 3 stages).
roundtrip 3d-ep "--system dgx-h100 --nodes 2" --strategy 3d --model mixtral-8x7b --tp 2 --pp 2 --sequence-parallel on --ep 8 --global-batch 16 --seq-len 1024 --precision bf16
roundtrip 3d-uneven "--system dgx-h100 --nodes 1 --devices-per-node 6" --strategy 3d --model llama3-8b --pp 3 --global-batch 12 --seq-len 1024 --precision bf16
# The every-device 3-D plan's collectives run again when read back, with the algorithm the
# trace names (comm_algorithm in its global metadata: 3d uses the ring): the reader's time is
# the writer's but for the rounding of compute durations to microseconds (16 ranks x ~800
# nodes, each off by at most 0.5 us, much of it off the critical path): 1e-4 of 2.5 s is 250 us.
# --allreduce nccl overrides it: NCCL's channels and protocols, a different time. (auto would
# not show it: on NVLink it takes the ring wherever the ring's closed form is the lesser.)
b=$("$DTSIM" run --system dgx-a100 --nodes 2 --chakra "$TMP/rt-3d-sp-zero1" --json 2>"$TMP/err" | json_num iteration_time_s)
c=$("$DTSIM" run --system dgx-a100 --nodes 2 --chakra "$TMP/rt-3d-sp-zero1" --allreduce nccl --json 2>>"$TMP/err" | json_num iteration_time_s)
a=$("$DTSIM" run --system dgx-a100 --nodes 2 --strategy 3d --model gpt3-1.7b --tp 4 --pp 2 --global-batch 16 --micro-batch 1 --sequence-parallel on --zero 1 --iterations 1 --symmetry off --json | json_num iteration_time_s)
[ -n "$a" ] && [ -n "$b" ] && near "$b" "$a" 1e-4 && ok "3d read back with the ring its trace names: $a s, $b s" ||
  bad "3d read back with its trace's algorithm: $a s written, $b s read: $(cat "$TMP/err")"
[ -n "$c" ] && ! near "$c" "$a" 1e-4 && ok "--allreduce nccl overrides the trace's algorithm: $c s" ||
  bad "--allreduce nccl beside the trace's ring: $c s, written $a s"
# --symmetry on keeps the folded plans (one device a stage, its collectives timed before the
# run), written for every rank they stand for; ZeRO 3 has only the folded 3-D plan.
roundtrip dp-folded "--nodes 2 --devices-per-node 4" --strategy dp --symmetry on
roundtrip 3d-folded "--system dgx-a100 --nodes 2" --strategy 3d --model gpt3-1.7b --tp 2 --pp 2 --global-batch 16 --micro-batch 1 --symmetry on
roundtrip 3d-zero3 "--system dgx-a100 --nodes 2" --strategy 3d --model gpt3-1.7b --tp 2 --pp 2 --global-batch 16 --micro-batch 1 --zero 3

# One file per rank, and comm_group.json; the same job written twice is the same bytes.
n=$(ls "$TMP/rt-3d" | grep -c '^dtsim\.[0-9]*\.et$')
[ "$n" -eq 16 ] && [ -s "$TMP/rt-3d/comm_group.json" ] && ok "3d on 16 GPUs: 16 rank files and comm_group.json" ||
  bad "3d on 16 GPUs: $n rank files"
"$DTSIM" run --system dgx-a100 --nodes 2 --strategy 3d --model gpt3-1.7b --tp 2 --pp 2 --global-batch 32 \
  --micro-batch 2 --chakra-out "$TMP/rt-3d-again" >/dev/null 2>&1
same=1
for f in "$TMP"/rt-3d/*; do cmp -s "$f" "$TMP/rt-3d-again/$(basename "$f")" || same=0; done
[ "$same" -eq 1 ] && ok "export is deterministic" || bad "export differs between two runs"

# Parameter servers as point-to-point: host servers are ranks of their own after the workers
# (all CPU ops, which the reader runs on the hosts, round-robin over the nodes, as --ps-placement
# cpu places them), device servers streams of their device's rank; each push a send and a
# receive, each aggregation a compute node, each pull a send and a receive.
roundtrip ps-resnet50 "--nodes 2 --devices-per-node 4" --strategy ps
roundtrip ps-vgg16-1 "--nodes 2 --devices-per-node 4" --strategy ps --model vgg16
roundtrip ps-vgg16-2 "--nodes 2 --devices-per-node 4" --strategy ps --model vgg16 --ps-count 2
roundtrip ps-vgg16-gpu "--nodes 2 --devices-per-node 4" --strategy ps --model vgg16 --ps-placement gpu --ps-count 3
# Four servers on two nodes: servers 2 and 3 on the second socket of their host, where the
# reader puts host ranks 10 and 11 too.
roundtrip ps-vgg16-4 "--nodes 2 --devices-per-node 4" --strategy ps --model vgg16 --ps-count 4
n=$(ls "$TMP/rt-ps-vgg16-2" | grep -c '^dtsim\.[0-9]*\.et$')
[ "$n" -eq 10 ] && ok "ps: 8 workers and 2 servers, 10 rank files" || bad "ps: $n rank files, want 10"
# Only ranks past the devices that hold nothing but CPU ops go to the hosts: the two servers'
# ranks 8 and 9 would, the workers' ranks 4 to 7 have no device on a cluster of 4.
expect_error "ps workers beyond the cluster" "the trace has 10 ranks, the cluster 4 devices" run --nodes 1 \
  --devices-per-node 4 --chakra "$TMP/rt-ps-vgg16-2"
# CHAOS: the threads of one device are one rank, each thread a stream of its own.
roundtrip chaos "--device xeon-phi-7120p" --strategy chaos --threads 16

# --- traces the project generates, values worked out by hand -------------------------------------
# One rank, 2 micro-batches x 2 layers: forward 4 x 100 us, backward 4 x 200 us, optimizer 500 us.
"$GEN" 3d "$TMP/one" 1 1 1 2 2
t=$("$DTSIM" run --nodes 1 --devices-per-node 1 --chakra "$TMP/one" --json | json_num iteration_time_s)
near "$t" 0.0017 1e-9 && ok "recorded durations: 1700 us ($t s)" || bad "recorded durations: $t, want 0.0017"
# A ring all-reduce per rank (Chakra's microbenchmark): the time of the same collective alone.
"$GEN" ring "$TMP/ring" 8 67108864
t=$("$DTSIM" run --nodes 1 --devices-per-node 8 --chakra "$TMP/ring" --json | json_num iteration_time_s)
c=$("$DTSIM" collective --nodes 1 --devices-per-node 8 --op allreduce --bytes 64M --json | json_num time_s)
[ -n "$t" ] && near "$t" "$c" 1e-9 && ok "ring all-reduce trace = dtsim collective ($t s)" ||
  bad "ring all-reduce trace: $t s, collective $c s"
# No recorded time: 10^12 FLOPs on a V100 (15.7 TFLOP/s fp32 peak, NVIDIA V100 datasheet) take
# at least 63.7 ms, and less than twice that at any sane efficiency.
"$GEN" flops "$TMP/flops" 1000000000000
t=$("$DTSIM" run --nodes 1 --devices-per-node 1 --system dgx1-v100 --chakra "$TMP/flops" --json | json_num iteration_time_s)
awk -v t="$t" 'BEGIN { exit !(t >= 1e12 / 15.7e12 && t < 2e12 / 15.7e12) }' &&
  ok "FLOPs through the device model: $t s for 1e12 FLOPs on a V100" || bad "FLOPs: $t s"
# A 3-D job of 8 ranks with tensor, pipeline and data-parallel groups runs.
"$GEN" 3d "$TMP/3d" 2 2 2 2 2
"$DTSIM" run --nodes 1 --devices-per-node 8 --chakra "$TMP/3d" --json >"$TMP/out" 2>"$TMP/err" &&
  grep -q '"devices":8' "$TMP/out" && ok "generated 3-D trace of 8 ranks" || bad "generated 3-D trace: $(cat "$TMP/err")"

# --- bad traces: one line naming the file, the node and the problem; status 2 ---------------------
for k in missing-dep cycle bad-group unmatched; do "$GEN" $k "$TMP/$k"; done
expect_error "dependency on a missing node" "gen.1.et: node 1 (lost): depends on node 42" run --nodes 1 --devices-per-node 2 --chakra "$TMP/missing-dep"
expect_error "cycle" "gen.1.et: node 1 (a): its dependencies form a cycle" run --nodes 1 --devices-per-node 2 --chakra "$TMP/cycle"
expect_error "group naming a rank that does not exist" "comm_group.json: group \"0\" names rank 5, which does not exist" run --nodes 1 --devices-per-node 2 --chakra "$TMP/bad-group"
expect_error "collectives that do not match" "process group 0" run --nodes 1 --devices-per-node 2 --chakra "$TMP/unmatched"
expect_error "more ranks than devices" "the trace has 8 ranks, the cluster 4 devices" run --nodes 1 --devices-per-node 4 --chakra "$TMP/3d"
mkdir "$TMP/trunc"
f=$(ls "$TMP"/one/gen.0.et)
size=$(wc -c <"$f")
head -c $((size - 3)) "$f" >"$TMP/trunc/gen.0.et"
expect_error "truncated" "trunc/gen.0.et: truncated" run --nodes 1 --devices-per-node 1 --chakra "$TMP/trunc"
mkdir "$TMP/garbage"
printf 'P5\n# not a trace, an image\n255 255\n' >"$TMP/garbage/gen.0.et"
expect_error "garbage" "garbage/gen.0.et: " run --nodes 1 --devices-per-node 1 --chakra "$TMP/garbage"
mkdir "$TMP/gz"
printf '\037\213\010\000' >"$TMP/gz/gen.0.et"
expect_error "gzip magic" "gz/gen.0.et: a gzip file" run --nodes 1 --devices-per-node 1 --chakra "$TMP/gz"
mkdir "$TMP/claim"
printf '\000\200\200\200\200\004' >"$TMP/claim/gen.0.et"
expect_error "a length of 1 GiB" "claims 1073741824 bytes" run --nodes 1 --devices-per-node 1 --chakra "$TMP/claim"
# A 1 GiB file (sparse: a good trace, then zeros): refused at its first empty node, in bounded
# memory and time, without reading the rest.
mkdir "$TMP/huge"
cp "$f" "$TMP/huge/gen.0.et"
truncate -s 1G "$TMP/huge/gen.0.et"
expect_error "1 GiB file" "huge/gen.0.et: node 0 (unnamed): type 0 is not a node type" run --nodes 1 --devices-per-node 1 --chakra "$TMP/huge"
if [ -x /usr/bin/time ]; then
  /usr/bin/time -f %M "$DTSIM" run --nodes 1 --devices-per-node 1 --chakra "$TMP/huge" 2>"$TMP/rss" >/dev/null
  rss=$(tail -n 1 "$TMP/rss")
  [ "$rss" -lt 200000 ] && ok "1 GiB file: $rss KiB resident" || bad "1 GiB file: $rss KiB resident"
fi
mkdir "$TMP/empty" "$TMP/gap"
expect_error "no trace in the folder" "no Chakra execution trace" run --chakra "$TMP/empty"
cp "$f" "$TMP/gap/gen.0.et"
cp "$f" "$TMP/gap/gen.2.et"
expect_error "a rank missing" "rank 1 is missing" run --nodes 1 --devices-per-node 4 --chakra "$TMP/gap"
expect_error "not a folder" "$TMP/none" run --chakra "$TMP/none"
# The same keys in a scenario file; a problem names the file's line.
printf '[scenario]\nchakra = %s\nnodes = 1\ndevices-per-node = 8\n' "$TMP/3d" >"$TMP/trace.ini"
"$DTSIM" run "$TMP/trace.ini" --json 2>"$TMP/err" | grep -q '"devices":8' && ok "chakra = DIR in a scenario file" ||
  bad "chakra = DIR in a scenario file: $(cat "$TMP/err")"
printf '[scenario]\nchakra = %s\n' "$TMP/empty" >"$TMP/empty.ini"
expect_error "a scenario file's empty trace folder" "empty.ini:2: \[scenario\] chakra" run "$TMP/empty.ini"
expect_error "--model beside --chakra" "--model does not apply" run --nodes 1 --devices-per-node 8 --chakra "$TMP/3d" --model vgg16
expect_error "sweep writing traces" "a sweep writes no Chakra traces" sweep --devices 1,2 --chakra-out "$TMP/sweep"
expect_error "search of a trace" "a search ranks the parallel configurations" search --chakra "$TMP/3d"
"$DTSIM" run --nodes 1 --devices-per-node 8 --chakra "$TMP/3d" | head -n 1 | grep -q "^Chakra trace .*, 8 ranks on 8 devices" &&
  ok "the table names the trace" || bad "the table's title: $("$DTSIM" run --nodes 1 --devices-per-node 8 --chakra "$TMP/3d" | head -n 1)"

# --- the schema, independently: Python's protobuf on our .proto (protoc --python_out) ----------
py=""
for c in python3 /usr/bin/python3; do
  if command -v "$c" >/dev/null 2>&1 && "$c" -c "import google.protobuf" 2>/dev/null; then py=$c; break; fi
done
if [ -z "$py" ] || ! command -v protoc >/dev/null 2>&1; then
  echo "skip the schema check with Python's protobuf: needs protoc (Debian protobuf-compiler) and python3-protobuf"
else
  protoc --python_out="$TMP" -I "$(dirname "$PROTO")" "$PROTO"
  cat >"$TMP/check.py" <<'PY'
# Reads every rank file of the folders given as Chakra's feeder does (varint-prefixed
# GlobalMetadata then Nodes) and checks what Chakra's tools rely on; with --write DIR writes a
# two-rank trace the way Chakra's generator does (comm_type and comm_size int64).
import glob, json, os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import et_def_pb2 as pb

def varint(f):
    shift = result = 0
    while True:
        c = f.read(1)
        if not c:
            return None
        result |= (c[0] & 0x7F) << shift
        if not c[0] & 0x80:
            return result
        shift += 7

def messages(path):
    with open(path, "rb") as f:
        while True:
            n = varint(f)
            if n is None:
                return
            yield f.read(n)

def put(f, m):
    data = m.SerializeToString()
    n = len(data)
    while True:
        b = n & 0x7F
        n >>= 7
        f.write(bytes([b | 0x80 if n else b]))
        if not n:
            break
    f.write(data)

if sys.argv[1] == "--write":
    for rank in range(2):
        with open(os.path.join(sys.argv[2], "py.%d.et" % rank), "wb") as f:
            meta = pb.GlobalMetadata(version="0.0.4")
            if len(sys.argv) > 3:
                meta.attr.add(name="comm_algorithm", string_val=sys.argv[3])
            put(f, meta)
            a = pb.Node(id=0, name="gemm", type=pb.COMP_NODE, duration_micros=250)
            a.attr.add(name="is_cpu_op", bool_val=False)
            put(f, a)
            b = pb.Node(id=1, name="ALL_REDUCE", type=pb.COMM_COLL_NODE, data_deps=[0])
            b.attr.add(name="is_cpu_op", bool_val=False)
            b.attr.add(name="comm_type", int64_val=pb.ALL_REDUCE)
            b.attr.add(name="comm_size", int64_val=1 << 20)
            put(f, b)
    sys.exit(0)

if sys.argv[1] == "--ps":
    # Prints the tensors, the bytes worker 0 pushes, and each server's aggregations.
    d, W, K = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    def nodes_of(rank):
        for data in list(messages(os.path.join(d, "dtsim.%d.et" % rank)))[1:]:
            n = pb.Node()
            n.ParseFromString(data)
            yield n, {a.name: a for a in n.attr}
    pushed = 0
    tensors = set()
    for n, a in nodes_of(0):
        if n.type == pb.COMM_SEND_NODE:
            assert W <= a["comm_dst"].int32_val < W + K, n.name
            pushed += a["comm_size"].int64_val
            tensors.add(a["comm_tag"].int32_val)
    aggs = []
    for k in range(K):
        count = {}
        for n, a in nodes_of(W + k):
            assert a["is_cpu_op"].bool_val, (k, n.name)
            count[n.type] = count.get(n.type, 0) + 1
        c = count.get(pb.COMP_NODE, 0)
        assert count.get(pb.COMM_RECV_NODE, 0) == W * c and count.get(pb.COMM_SEND_NODE, 0) == W * c
        aggs.append(c)
    print(len(tensors), pushed, *aggs)
    sys.exit(0)

if sys.argv[1] == "--streams":
    files = sorted(glob.glob(os.path.join(sys.argv[2], "*.et")))
    streams = set()
    for data in list(messages(files[0]))[1:]:
        n = pb.Node()
        n.ParseFromString(data)
        for a in n.attr:
            if a.name == "stream":
                streams.add(a.int64_val)
    print(len(files), len(streams))
    sys.exit(0)

if sys.argv[1] == "--groups":
    d = sys.argv[2]
    T, D, P, m, blocks = (int(x) for x in sys.argv[3:8])
    with open(os.path.join(d, "comm_group.json")) as f:
        groups = {k: tuple(v) for k, v in json.load(f).items()}
    for rank in range(T * D * P):
        s, d_, r = rank // (D * T), rank // T % D, rank % T
        tp = tuple((s * D + d_) * T + x for x in range(T))
        dp = tuple((s * D + x) * T + r for x in range(D))
        tied = tuple(sorted({(0 * D + d_) * T + r, ((P - 1) * D + d_) * T + r}))
        count = {}
        for data in list(messages(os.path.join(d, "dtsim.%d.et" % rank)))[1:]:
            n = pb.Node()
            n.ParseFromString(data)
            if n.type == pb.COMM_COLL_NODE:
                attrs = {a.name: a for a in n.attr}
                g = groups[attrs["pg_name"].string_val]
                assert rank in g, (rank, g)
                assert attrs["comm_type"].int64_val == pb.ALL_REDUCE, (rank, n.name)
                count[g] = count.get(g, 0) + 1
        assert count.pop(tp) == m * (4 * blocks + 1), (rank, "tp")
        assert count.pop(dp) >= 1, (rank, "dp")
        assert count.pop(tied) == 1, (rank, "tied embedding")
        assert not count, (rank, count)
    print("tp %d, dp %d, embedding 2 ranks" % (T, D))
    sys.exit(0)

nodes = 0
for d in sys.argv[1:]:
    for path in sorted(glob.glob(os.path.join(d, "*.et"))):
        msgs = messages(path)
        meta = pb.GlobalMetadata()
        meta.ParseFromString(next(msgs))
        ids = set()
        deps = []
        for data in msgs:
            n = pb.Node()
            n.ParseFromString(data)
            assert n.type in (pb.METADATA_NODE, pb.COMP_NODE, pb.COMM_SEND_NODE,
                              pb.COMM_RECV_NODE, pb.COMM_COLL_NODE), (path, n.id, n.type)
            assert n.id not in ids, (path, n.id)
            ids.add(n.id)
            deps += list(n.data_deps) + list(n.ctrl_deps)
            attrs = {a.name: a for a in n.attr}
            assert attrs["is_cpu_op"].WhichOneof("value") == "bool_val"
            if n.type == pb.COMM_COLL_NODE:
                assert attrs["comm_type"].WhichOneof("value") == "int64_val"
                assert attrs["comm_size"].WhichOneof("value") == "int64_val"
                assert attrs["pg_name"].WhichOneof("value") == "string_val"
            if n.type in (pb.COMM_SEND_NODE, pb.COMM_RECV_NODE):
                for k in ("comm_src", "comm_dst", "comm_tag"):
                    assert attrs[k].WhichOneof("value") == "int32_val", (path, n.id, k)
            nodes += 1
        for x in deps:
            assert x in ids, (path, x)
print(nodes)
PY
  n=$("$py" "$TMP/check.py" "$TMP/rt-dp" "$TMP/rt-pp-gpipe" "$TMP/rt-3d" "$TMP/rt-ps-vgg16-2" \
    "$TMP/rt-ps-vgg16-gpu" "$TMP/rt-chaos" 2>"$TMP/err")
  [ -n "$n" ] && [ "$n" -gt 0 ] && ok "Python's protobuf reads the written traces ($n nodes)" ||
    bad "Python's protobuf on the written traces: $(cat "$TMP/err")"
  # The 3-D job of 16 GPUs (tp 2, pp 2, so dp 4; 32 samples in micro-batches of 2: 4 per
  # replica) is written from the every-device plan: its communication is collective nodes over
  # Megatron's groups. Rank (s D + d) T + r is tensor rank r of replica d at stage s, so rank
  # 0's tensor group is {0, 1}, its data group {0, 2, 4, 6}, and the tied embedding joins the
  # same device of the first and the last stage, {0, 8}. gpt3-1.7b has 24 blocks, 12 a stage;
  # each block all-reduces twice forward and twice backward (Megatron's f and g), and the
  # vocabulary-parallel embedding (first stage) or LM head (last stage) once more per
  # micro-batch: 4 x (4 x 12 + 1) = 196 tensor-parallel all-reduces on every rank.
  if v=$("$py" "$TMP/check.py" --groups "$TMP/rt-3d" 2 4 2 4 12 2>"$TMP/err"); then
    ok "3d written as collectives over its tensor, data and embedding groups ($v)"
  else
    bad "3d collectives and groups: $v $(cat "$TMP/err")"
  fi
  # VGG-16's parameters as the servers see them: 138,357,544 (Simonyan and Zisserman; torchvision
  # counts the same), fp32, in 16 tensors (13 convolutions, 3 fully connected). The servers
  # balance the largest tensor first: fc6 (25088 x 4096 + 4096 = 102,764,544 parameters) alone
  # on server 0 (rank 8), the 15 others (35,593,000, less than fc6) on server 1 (rank 9).
  if v=$("$py" "$TMP/check.py" --ps "$TMP/rt-ps-vgg16-2" 8 2 2>"$TMP/err"); then
    [ "$v" = "16 553430176 1 15" ] && ok "ps written as sends, receives and aggregations ($v)" ||
      bad "ps: $v, want 16 tensors, 553430176 bytes, 1 and 15 aggregations"
  else
    bad "ps trace: $(cat "$TMP/err")"
  fi
  v=$("$py" "$TMP/check.py" --streams "$TMP/rt-chaos" 2>"$TMP/err")
  [ "$v" = "1 16" ] && ok "chaos: one rank, 16 thread streams" || bad "chaos: $v (ranks, streams), want 1 16: $(cat "$TMP/err")"
  mkdir "$TMP/py" "$TMP/py-algo"
  "$py" "$TMP/check.py" --write "$TMP/py"
  "$py" "$TMP/check.py" --write "$TMP/py-algo" no-such-algorithm
  expect_error "a trace naming an unknown algorithm" "py.0.et: the global metadata's comm_algorithm" \
    run --nodes 1 --devices-per-node 2 --chakra "$TMP/py-algo"
  # 250 us of compute, then an all-reduce of 1 MiB over the two ranks.
  t=$("$DTSIM" run --nodes 1 --devices-per-node 2 --chakra "$TMP/py" --json | json_num iteration_time_s)
  c=$("$DTSIM" collective --nodes 1 --devices-per-node 2 --op allreduce --bytes 1M --json | json_num time_s)
  want=$(awk -v c="$c" 'BEGIN { printf "%.12f", 250e-6 + c }')
  [ -n "$t" ] && near "$t" "$want" 1e-9 && ok "a trace written by Python's protobuf: $t s = 250 us + the all-reduce" ||
    bad "a trace written by Python's protobuf: $t s, want $want"
fi

# --- Chakra's own generator (src/generator/generator.py of a Chakra checkout named by
# DTSIM_CHAKRA_SRC, with its published schema): its microbenchmarks of 8 ranks, one collective
# each, take what dtsim collective gives for the same collective -------------------------------
if [ -z "${DTSIM_CHAKRA_SRC:-}" ] || [ -z "$py" ] || ! command -v protoc >/dev/null 2>&1; then
  echo "skip Chakra's generated microbenchmarks: set DTSIM_CHAKRA_SRC to a checkout of mlcommons/chakra (needs protoc and python3-protobuf)"
else
  pkg="$TMP/pkg/chakra"
  mkdir -p "$pkg/schema/protobuf" "$pkg/src/generator" "$pkg/src/third_party/utils" "$TMP/gen"
  cp "$DTSIM_CHAKRA_SRC/schema/protobuf/et_def.proto" "$pkg/schema/protobuf/"
  cp "$DTSIM_CHAKRA_SRC/src/generator/generator.py" "$pkg/src/generator/"
  cp "$DTSIM_CHAKRA_SRC/src/third_party/utils/protolib.py" "$pkg/src/third_party/utils/"
  protoc --python_out="$pkg/schema/protobuf" -I "$pkg/schema/protobuf" "$pkg/schema/protobuf/et_def.proto"
  for d in "$pkg" "$pkg/schema" "$pkg/schema/protobuf" "$pkg/src" "$pkg/src/generator" \
           "$pkg/src/third_party" "$pkg/src/third_party/utils"; do touch "$d/__init__.py"; done
  (cd "$TMP/gen" && PYTHONPATH="$TMP/pkg" "$py" -m chakra.src.generator.generator --num_npus 8 \
    --default_comm_size 67108864)
  for pair in ALL_REDUCE:allreduce ALL_GATHER:allgather REDUCE_SCATTER:reduce-scatter \
              ALL_TO_ALL:alltoall BROADCAST:broadcast; do
    name=${pair%%:*}
    op=${pair#*:}
    mkdir "$TMP/gen-$name"
    cp "$TMP/gen/$name".*.et "$TMP/gen-$name/"
    t=$("$DTSIM" run --nodes 1 --devices-per-node 8 --chakra "$TMP/gen-$name" --json | json_num iteration_time_s)
    c=$("$DTSIM" collective --nodes 1 --devices-per-node 8 --op "$op" --bytes 64M --json | json_num time_s)
    [ -n "$t" ] && near "$t" "$c" 1e-9 && ok "Chakra's generated $name: $t s = dtsim collective" ||
      bad "Chakra's generated $name: $t s, dtsim collective $c s"
  done
fi

echo "chakra: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
