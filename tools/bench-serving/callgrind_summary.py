#!/usr/bin/env python3
"""Instructions per request from callgrind dumps, grouped by where the cost sits.

    callgrind_summary.py table   DUMP:LABEL:REQUESTS ...          instructions and calls per request
    callgrind_summary.py report  DUMP LABEL REQUESTS [--top N]    one scenario's cost centres (Markdown)
    callgrind_summary.py grep    DUMP REQUESTS PATTERN            functions whose demangled name matches
    callgrind_summary.py callers DUMP REQUESTS PATTERN            who calls them, by the cost of the calls
    callgrind_summary.py callees DUMP REQUESTS PATTERN            what they call

DUMP is one callgrind output file holding only the measured batch (tools/bench-serving/profile.sh takes a
`callgrind_control -d` after a warm-up batch and another after the measured one). Instructions are
valgrind's `Ir`: user-space instructions of every thread of the process; the kernel's side of a system
call is not counted (its calls are, see "calls per request"). Swift names are demangled with
`swift demangle`.

The report shows the same total several ways:
  - charged to the layer that causes it: each program function's own instructions go to its layer (its
    Swift module, or a finer group for NIO, HTTP/2 and Hummingbird types, see `component`); the own
    instructions of shared code (Swift runtime and standard library, libc, the concurrency runtime,
    libdispatch, compiler helpers) are handed up to its callers in proportion to the cost of the calls
    from each, until they reach program code. Adds up to 100%.
  - by thread: inclusive cost of each thread kind's entry function.
  - by kind, exclusive: where the instructions execute (generic metadata, ARC, malloc/free,
    exclusivity checks, the concurrency runtime, ...), and which types cause the metadata look-ups and
    exclusivity checks.
  - inclusive cost of synchronous entry points (HTTP/2 frame decode and encode, HPACK, stream channel
    creation and close, the response write, JSON, image decode, the engine ...), and calls per request
    of malloc, swift_allocObject, retain/release, task and job functions, and system calls.
"""
import collections
import re
import subprocess
import sys


# ---------------------------------------------------------------------------------------------- parsing

class Profile:
    def __init__(self, path):
        self.total = 0
        self.self_cost = collections.Counter()          # fn -> own Ir
        self.obj = {}                                     # fn -> object file
        self.edges = collections.Counter()                # (caller, callee) -> inclusive Ir of those calls
        self.calls = collections.Counter()                # (caller, callee) -> call count
        self._parse(path)
        self.names = demangle(set(self.self_cost) | {c for _, c in self.edges} | {c for c, _ in self.edges})

    def _parse(self, path):
        ids = {"ob": {}, "fl": {}, "fn": {}}
        cur_ob = cur_fn = None
        cfn = cob = None
        pending_call = None
        totals = None

        def name_of(kind, value):
            m = re.match(r"\((\d+)\)(?: (.*))?$", value)
            if not m:
                return value
            key, name = m.group(1), m.group(2)
            table = ids["fl" if kind in ("fl", "fi", "fe", "cfi", "cfl") else kind.lstrip("c")]
            if name is not None:
                table[key] = name
            return table.get(key, "?")

        with open(path, errors="replace") as f:
            for line in f:
                line = line.rstrip("\n")
                if not line:
                    continue
                c = line[0]
                if c.isdigit() or c in "+-*":
                    parts = line.split()
                    cost = int(parts[1]) if len(parts) > 1 else 0
                    if pending_call is not None:
                        self.edges[(cur_fn, pending_call[0])] += cost
                        self.calls[(cur_fn, pending_call[0])] += pending_call[1]
                        pending_call = None
                    else:
                        self.self_cost[cur_fn] += cost
                    continue
                key, _, value = line.partition("=")
                if key == "fn":
                    cur_fn = name_of("fn", value)
                    self.obj.setdefault(cur_fn, cur_ob)
                elif key == "ob":
                    cur_ob = name_of("ob", value)
                elif key == "cob":
                    cob = name_of("ob", value)
                elif key == "cfn":
                    cfn = name_of("fn", value)
                    if cob is not None:
                        self.obj.setdefault(cfn, cob)
                        cob = None
                elif key == "calls":
                    pending_call = (cfn, int(value.split()[0]))
                elif key in ("fl", "fi", "fe", "cfi", "cfl"):
                    name_of(key, value)
                elif line.startswith("totals:") or line.startswith("summary:"):
                    totals = int(line.split()[1])
        self.total = totals if totals is not None else sum(self.self_cost.values())


def demangle(symbols):
    """Mangled name -> demangled (full, with modules). Unmangled names map to themselves."""
    names = {s: s for s in symbols}
    mangled = sorted(s for s in symbols if s and base(s).startswith(("$s", "_$s", "$S", "_T0")))
    if mangled:
        try:
            out = subprocess.run(["swift", "demangle"], input="\n".join(base(s) for s in mangled), text=True,
                                 capture_output=True, timeout=300).stdout.split("\n")
            for s, d in zip(mangled, out):
                names[s] = d + suffix(s)
        except (OSError, subprocess.SubprocessError):
            pass
    return names


def base(symbol):
    """The symbol without callgrind's recursion suffix (`'2`)."""
    return re.sub(r"'\d+$", "", symbol or "")


def suffix(symbol):
    m = re.search(r"'\d+$", symbol or "")
    return m.group(0) if m else ""


# ------------------------------------------------------------------------------------------ classifying

def swift_module(symbol):
    """The module a mangled Swift symbol belongs to ("Swift" for the standard library)."""
    s = base(symbol)
    for p in ("_$s", "$s", "$S"):
        if s.startswith(p):
            s = s[len(p):]
            break
    else:
        return None
    if s[:1] in ("S", "s"):   # standard substitutions: Sa (Array), SS (String), ss (module Swift) ...
        return "Swift"
    m = re.match(r"(\d+)", s)
    if not m:
        return "Swift"
    n = int(m.group(1))
    return s[len(m.group(1)):len(m.group(1)) + n]


SHARED_OBJECTS = ("libswiftCore", "libswift_Concurrency", "libdispatch", "libc.so", "libc-", "ld-linux", "libpthread",
                  "libstdc++", "libgcc", "libm.so", "libFoundation", "libswiftDispatch", "libswift_StringProcessing",
                  "libBlocksRuntime", "vgpreload", "libswiftSynchronization", "libswift_Volatile")


def is_shared(p, fn):
    """Runtime and library code whose cost is charged to its first caller outside it."""
    obj = p.obj.get(fn) or ""
    if any(o in obj for o in SHARED_OBJECTS):
        return True
    if swift_module(fn) == "Swift":
        return True   # standard library specializations compiled into the executable
    name = base(fn)
    return name.startswith(("swift_", "swift::", "_swift_", "__swift", "memcpy", "memmove", "memset", "__mem", "objectdestroy", "0x"))


def component(p, fn):
    """The layer a function belongs to: Swift module, with finer groups for NIO, HTTP/2 and Hummingbird."""
    name = p.names.get(fn, fn)
    obj = p.obj.get(fn) or ""
    mod = swift_module(fn)
    if mod is None:
        b = base(fn)
        if b.startswith("c_nio_llhttp") or "llhttp" in b:
            return "HTTP/1.1 codec (NIOHTTP1, llhttp)"
        if "CNIOBoringSSL" in b:
            return "TLS (BoringSSL)"
        if b.startswith(("c_nio_", "CNIO")):
            return "NIO C helpers"
        if "libspng" in obj or "/libz." in obj or b.startswith("spng_"):
            return "image decode (GlimpseImage, libspng, zlib)"
        if "turbojpeg" in obj or "libjpeg" in obj:
            return "image decode (GlimpseImage, libspng, zlib)"
        if "glimpse" in obj and not b.startswith(("_", "0x")):
            return "C in executable: " + b
        return "other (%s)" % (obj.rsplit("/", 1)[-1] or "?")
    if mod == "NIOHPACK":
        return "HPACK (NIOHPACK)"
    if mod == "NIOHTTP2":
        if re.search(r"HTTP2StreamChannel|MultiplexerAbstractChannel|StreamMultiplexer|InlineStreamMultiplexer|"
                     r"StreamChannelList|HTTP2CommonInboundStreamMultiplexer|AsyncStreamMultiplexer|"
                     r"HTTP2StreamDelegate|NIOHTTP2AsyncSequence|HTTP2InboundStreamChannels|"
                     r"configureAsyncHTTP2Pipeline|StreamChannelFlowController", name):
            return "HTTP/2 per-stream child channels (NIOHTTP2 multiplexer)"
        if re.search(r"HPACK", name):
            return "HPACK (NIOHPACK)"
        return "HTTP/2 framing + state machine (NIOHTTP2)"
    if mod in ("NIOHTTPTypesHTTP2",):
        return "HTTP/2 <-> HTTPTypes codec (NIOHTTPTypesHTTP2)"
    if mod in ("NIOHTTP1", "NIOHTTPTypesHTTP1", "NIOHTTPTypes"):
        return "HTTP/1.1 codec (NIOHTTP1, llhttp)" if mod != "NIOHTTPTypes" else "NIOHTTPTypes"
    if mod == "NIOCore":
        if re.search(r"NIOAsyncChannel|NIOAsyncWriter|NIOAsyncSequenceProducer|NIOThrowingAsyncSequenceProducer|"
                     r"NIOAsyncChannelHandler|NIOAsyncChannelInbound|NIOAsyncChannelOutbound|AsyncChannel|"
                     r"NIOAsyncProducerBackPressure|NIOAsyncWriterSinkDelegate", name):
            return "NIOAsyncChannel bridge (NIOCore async sequences/writers)"
        if re.search(r"ChannelPipeline|ChannelHandlerContext|ChannelHandler|NIOAny", name):
            return "channel pipeline traversal (NIOCore)"
        if re.search(r"EventLoopFuture|EventLoopPromise|CallbackList", name):
            return "futures/promises (NIOCore)"
        if re.search(r"ByteBuffer", name):
            return "ByteBuffer (NIOCore)"
        return "NIOCore other"
    if mod == "NIOPosix":
        return "event loop + sockets (NIOPosix)"
    if mod in ("NIOConcurrencyHelpers", "NIOEmbedded", "NIOTLS", "NIOSSL", "NIOExtras"):
        return mod
    if mod in ("HummingbirdCore", "Hummingbird", "HummingbirdRouter"):
        if re.search(r"Router|Trie|RouteCollection|EndpointResponder|MiddlewareGroup", name):
            return "Hummingbird router"
        return "Hummingbird request/response/body"
    if mod == "HTTPTypes":
        return "HTTPTypes (HTTPFields)"
    if mod == "GlimpseServer":
        return "GlimpseServer (Transport, Routes)"
    if mod == "GlimpseRPC":
        if re.search(r"[Bb]ase64", name):
            return "base64 (GlimpseRPC)"
        return "JSON-RPC (GlimpseRPC)"
    if mod == "GlimpseJSON":
        return "JSON parse (GlimpseJSON)"
    if mod in ("GlimpseImage",):
        return "image decode (GlimpseImage, libspng, zlib)"
    if mod in ("GlimpseEngine", "GlimpseKernels", "GlimpseTensor", "GlimpseONNX"):
        return "engine (GlimpseEngine, GlimpseKernels)"
    if mod == "GlimpseServing":
        return "serving: queue, batching, metrics (GlimpseServing)"
    if mod in ("Metrics", "CoreMetrics", "Prometheus"):
        return "metrics (swift-metrics, Prometheus)"
    if mod in ("Logging",):
        return "Logging"
    if mod in ("Atomics", "DequeModule", "InternalCollectionsUtilities", "BasicContainers", "_NIODataStructures",
               "NIOConcurrencyHelpers"):
        return "collections/atomics (%s)" % mod
    return mod


# (label, regex searched in the raw symbol: C++ runtime functions come demangled with their signatures)
KINDS = [
    ("generic metadata lookups, casts, conformances",
     r"getGenericMetadata|MetadataCache|GenericCacheEntry|TupleCacheEntry|getCache\(|MetadataWaitQueue|"
     r"ConcurrentReadableHashMap|LockingConcurrentMap|swift_getWitnessTable|swift_getAssociated|swift_dynamicCast|"
     r"^tryCast|tryCastTo|_conformsToProtocol|swift_conformsToProtocol|swift_getTypeByMangledName|"
     r"swift_getTupleTypeMetadata|swift_getFunctionTypeMetadata|swift_checkMetadataState|"
     r"swift_getExistentialTypeMetadata|instantiateGenericMetadata|instantiateCanonicalPrespecialized|"
     r"llvm::hashing|llvm::hash_|swift_getCanonicalSpecializedMetadata|swift_getObjectType|ConformanceState|"
     r"ProtocolConformance|_dynamicCast|MetadataCacheKey|swift_getOpaqueTypeConformance|swift_getTypeName"),
    ("exclusivity checks (swift_beginAccess/endAccess, their thread-local access set)",
     r"^swift_beginAccess|^swift_endAccess|AccessSet|SwiftTLSContext"),
    ("ARC retain/release",
     r"^swift_(unknownObject|bridgeObject|nonatomic_)?(retain|release|Retain|Release)(_n)?$|swift_isUniquelyReferenced|"
     r"_swift_release_dealloc|^swift_weak|RefCounts|^swift_arrayDestroy|^swift_arrayInitWithCopy"),
    ("Swift object alloc/dealloc",
     r"^(swift_allocObject|swift_deallocObject|swift_deallocClassInstance|swift_slowAlloc|swift_slowDealloc|"
     r"swift_deallocPartialClassInstance|swift_allocBox|swift_deallocBox|swift_deallocUninitializedObject|"
     r"swift_initStackObject|swift_initStaticObject|swift_allocEmptyBox)$"),
    ("malloc/free (libc)",
     r"^(malloc|free|cfree|realloc|calloc|_int_malloc|_int_free|_int_realloc|malloc_consolidate|tcache_.*|__libc_malloc|"
     r"__libc_free|__libc_calloc|__libc_realloc|_int_memalign|_mid_memalign|posix_memalign|aligned_alloc|memalign|"
     r"__posix_memalign|malloc_usable_size|__malloc_usable_size|unlink_chunk.*|alloc_perturb|sysmalloc|arena_get2.*|"
     r"__GI___libc_free|__GI___libc_malloc)$"),
    ("Swift concurrency runtime",
     r"^swift_task_|^swift_job_|^swift_continuation_|^swift_asyncLet_|^swift_taskGroup_|AsyncTask|swift::.*Task|"
     r"Executor|swift::.*Job|^swift_defaultActor_|swift::.*Actor|StatusRecord|TaskLocal|^swift_get_time|"
     r"^swift_clock_|^swift_concurrency|runJobInEstablishedExecutorContext|^swift_dispatch|^swift_cont|"
     r"StackAllocator|TaskAllocator|jobInvoke|__swift_run_job"),
    ("libdispatch (global executor queues, threads)", r"^_dispatch_|^dispatch_|^_os_|^os_"),
    ("value witnesses and enum payload helpers (unspecialized generic code)",
     r"value witness|^swift_getEnumCaseMultiPayload|^swift_getMultiPayloadEnumTag|^swift_storeEnumTagMultiPayload|"
     r"^swift_getEnumTagSinglePayload|^swift_storeEnumTagSinglePayload|^__swift_memcpy|boxed_opaque_existential|"
     r"^objectdestroy"),
    ("hashing (Swift.Hasher)", r"Swift\.Hasher|^\$ss6Hasher"),
    ("String and Substring operations (stdlib)",
     r"Swift\.(String|Substring|_String|_stringCompare|_StringGuts|_StringObject|Unicode)|_stringCompare"),
    ("mem*/str* (libc)",
     r"^(__)?(memcpy|memmove|memset|memcmp|bcmp|strlen|strcmp|memchr|mempcpy)|^__memcpy|^__memmove|^__memset|"
     r"^__memcmp|^__strlen|^__memchr|^__mempcpy|^wmemset"),
    ("locks, futex, pthread", r"^(pthread_|__pthread_|__lll_|lll_|futex_|__futex|___pthread|__GI___pthread|__GI___lll)"),
    ("system call wrappers (user side only)",
     r"^(read|write|writev|readv|recvmsg|sendmsg|recv|send|epoll_wait|epoll_ctl|epoll_pwait|eventfd.*|syscall|"
     r"__GI___libc_write|__libc_write|__libc_read|__GI___libc_read|__libc_writev|__writev|__readv|__libc_readv|"
     r"__GI___writev|close|__close|accept4|__libc_recvmsg|__libc_sendmsg|timerfd_settime|clock_gettime|"
     r"__clock_gettime.*|__vdso_.*|getpid|sched_yield|nanosleep|__nanosleep|clock_nanosleep.*|"
     r"__clock_nanosleep.*|gettimeofday|__internal_syscall_cancel|__syscall_cancel.*|__GI___clock_gettime|"
     r"__GI_epoll_wait)$"),
    ("thread-local storage lookups (__tls_get_addr)", r"^__tls_get_addr"),
]


def kind(p, fn):
    b = base(fn)
    obj = p.obj.get(fn) or ""
    for label, pattern in KINDS:
        if re.search(pattern, b):
            return label
    if "libswift_Concurrency" in obj:
        return "Swift concurrency runtime"
    if "libdispatch" in obj:
        return "libdispatch (global executor queues, threads)"
    if "ld-linux" in obj:
        return "dynamic linker"
    if "libswiftCore" in obj:
        return "other Swift runtime/stdlib (libswiftCore)"
    if "libc.so" in obj or "libc-" in obj:
        return "other libc"
    if swift_module(fn) == "Swift":
        return "stdlib specializations in the executable"
    return None   # the program's own code: shown by component


# -------------------------------------------------------------------------------------------- reports

ROOTS = "executor and thread loops (shared code with no program caller)"


def charged(p):
    """Component -> Ir. Program code keeps its own instructions; each shared function's own
    instructions are handed up to its callers in proportion to the cost of the calls from each, until
    they reach program code (a caller outside the shared set). What never reaches program code (thread
    entry points, the executor's job loop) stays in ROOTS."""
    shared, callers = shared_callers(p)
    out = collections.Counter()
    for fn, cost in p.self_cost.items():
        if fn not in shared:
            out[component(p, fn)] += cost
    pending = {fn: float(p.self_cost[fn]) for fn in shared if p.self_cost[fn]}

    def charge(fn, amount):
        out[component(p, fn)] += amount
    unrooted, left = hand_up(shared, callers, pending, charge, p.total * 1e-5)
    out[ROOTS] += unrooted + left
    return out


def shared_callers(p):
    """The shared functions, and for each the (program or shared) callers in other objects with the
    cost of their calls."""
    fns = set(p.self_cost) | {c for _, c in p.edges} | {a for a, _ in p.edges}
    shared = {fn for fn in fns if is_shared(p, fn)}
    callers = collections.defaultdict(list)
    for (a, b), cost in p.edges.items():
        if b in shared and base(a) != base(b) and cost > 0:
            callers[b].append((a, cost))
    return shared, callers


def hand_up(shared, callers, pending, charge, floor):
    """Hands each pending shared function's cost up to its callers in proportion to their calls' cost,
    `charge(caller, amount)` for program callers, until less than `floor` is left (at most 200 steps).
    Returns (the cost of shared functions without callers, what is still pending)."""
    unrooted = 0.0
    for _ in range(200):
        nxt = collections.Counter()
        for fn, amount in pending.items():
            cs = callers[fn]
            total = sum(c for _, c in cs)
            if not total:
                unrooted += amount
                continue
            for a, c in cs:
                share = amount * c / total
                if a in shared:
                    nxt[a] += share
                else:
                    charge(a, share)
        pending = nxt
        if sum(pending.values()) < floor:
            break
    return unrooted, sum(pending.values())


def strip_descriptors(name):
    """The entity a demangled name is about: without "specialization <...> of", "protocol witness for",
    "partial apply forwarder for" and the like; for a closure, what it is in."""
    prefixes = ("type metadata accessor for ", "protocol witness for ", "partial apply forwarder for ", "merged ",
                "outlined copy of ", "outlined destroy of ", "outlined init with copy of ", "outlined assign with take of ",
                "reabstraction thunk helper from ", "(1) await resume partial function for ",
                "await resume partial function for ", "suspend resume partial function for ", "async function pointer to ",
                "dispatch thunk of ", "key path getter for ", "lazy protocol witness table accessor for type ",
                "outlined retain of ", "outlined release of ")
    for _ in range(12):
        before = name
        name = re.sub(r"^\(\d+\) (await|suspend) resume partial function for ", "", name)
        for pre in prefixes:
            if name.startswith(pre):
                name = name[len(pre):]
        m = re.match(r"^(generic specialization|function signature specialization|generic partial specialization) <", name)
        if m:
            depth, i = 0, m.end() - 1
            while i < len(name):
                depth += {"<": 1, ">": -1}.get(name[i], 0)
                i += 1
                if depth == 0:
                    break
            name = name[i:]
            if name.startswith(" of "):
                name = name[4:]
        if name.startswith(("closure #", "implicit closure #", "@objc closure #")) and " in " in name:
            name = name.rsplit(" in ", 1)[1]
        if name == before:
            break
    return name


def type_family(name):
    """Module.Type of a demangled name (the outermost type), or the name itself."""
    n = strip_descriptors(name)
    m = re.match(r"^(?:static )?(?:\(extension in \w+\):)?(\w+)\.(\(?\w+)", n)
    return f"{m.group(1)}.{m.group(2).lstrip('(')}" if m else n[:80]


def charged_functions(p, label):
    """Program function -> Ir of the shared code of kind `label` it causes, by the same hand-up as
    `charged` (e.g. which type metadata accessors cause the generic metadata lookups)."""
    shared, callers = shared_callers(p)
    out = collections.Counter()
    pending = {fn: float(c) for fn, c in p.self_cost.items() if fn in shared and c and kind(p, fn) == label}

    def charge(fn, amount):
        out[fn] += amount
    unrooted, _ = hand_up(shared, callers, pending, charge, 1)
    out[ROOTS] += unrooted
    return out


THREADS = [
    ("NIO event loop thread (SelectableEventLoop.run)", r"^NIOPosix\.SelectableEventLoop\.run\(\) throws -> \(\)$"),
    ("Swift concurrency global executor threads (libdispatch workers)", r"^_dispatch_worker_thread$"),
    ("NIOThreadPool threads (image decode, ComputePool)", r"^closure #2 \(NIOPosix\.NIOThread\) -> \(\) in NIOPosix\.NIOThreadPool\._start"),
    ("batch worker threads (GlimpseServing.BatchQueue: run the engine)",
     r"closure #1 @Sendable \(\) -> \(\) in GlimpseServing\.BatchQueue\.init"),
    ("engine ThreadPool threads (GlimpseEngine.ThreadPool)", r"^closure #\d+ .* in GlimpseEngine\.ThreadPool\.init"),
]


def threads(p):
    """Inclusive cost of each kind of thread, found by its entry function (first match per kind)."""
    out_edges = collections.defaultdict(int)
    for (a, b), v in p.edges.items():
        if base(a) != base(b):
            out_edges[a] += v
    fns = set(p.self_cost) | {b for _, b in p.edges}
    rows = []
    for label, pattern in THREADS:
        rx = re.compile(pattern)
        best = 0
        for fn in fns:
            if rx.search(p.names.get(fn, fn)) and not re.search(r"'\d+$", fn):
                best = max(best, p.self_cost[fn] + out_edges[fn])
        rows.append((label, best))
    rows.append(("rest (main thread, other threads, calls in flight at the dump)", p.total - sum(v for _, v in rows)))
    return rows


def by_kind(p):
    out = collections.Counter()
    for fn, cost in p.self_cost.items():
        k = kind(p, fn)
        out[k if k else "program code: " + component(p, fn)] += cost
    return out


CALLS = [
    ("malloc", r"^(malloc|__libc_malloc|__GI___libc_malloc)$"),
    ("free", r"^(free|cfree|__libc_free|__GI___libc_free)$"),
    ("posix_memalign/aligned_alloc", r"^(posix_memalign|aligned_alloc|memalign|__posix_memalign)$"),
    ("realloc", r"^(realloc|__libc_realloc)$"),
    ("swift_allocObject", r"^swift_allocObject$"),
    ("swift_retain (+_n, unknown, bridge)", r"^swift_(unknownObject|bridgeObject)?retain(_n)?$"),
    ("swift_release (+_n, unknown, bridge)", r"^swift_(unknownObject|bridgeObject)?release(_n)?$"),
    ("swift_getGenericMetadata", r"^swift_getGenericMetadata$"),
    ("swift_dynamicCast*", r"^swift_dynamicCast"),
    ("swift_conformsToProtocol*", r"^swift_conformsToProtocol"),
    ("swift_task_create", r"^swift_task_create$"),
    ("swift_task_enqueue*", r"^swift_task_enqueue"),
    ("swift_job_run", r"^swift_job_run$"),
    ("swift_task_switch", r"^swift_task_switch$"),
    ("swift_continuation_resume*", r"^swift_continuation_(throwingR|r)esume"),
    ("swift_continuation_await", r"^swift_continuation_await$"),
    ("swift_task_alloc", r"^swift_task_alloc$"),
    ("read/readv/recvmsg", r"^(read|readv|recvmsg|__libc_read|__GI___libc_read|__readv|__libc_readv|__libc_recvmsg)$"),
    ("write/writev/sendmsg", r"^(write|writev|sendmsg|__libc_write|__GI___libc_write|__writev|__libc_writev|__GI___writev|__libc_sendmsg)$"),
    ("epoll_wait", r"^(epoll_wait|epoll_pwait|__GI_epoll_wait)$"),
    ("epoll_ctl", r"^epoll_ctl$"),
    ("futex wait/wake (via syscall, lll, futex_*)", r"^(syscall|__lll_lock_wait.*|__lll_lock_wake.*|futex_wait.*|__futex_abstimed_wait.*|futex_wake.*|__futex.*)$"),
    ("pthread_cond_signal/broadcast", r"^(pthread_cond_signal|pthread_cond_broadcast|___pthread_cond_signal|___pthread_cond_broadcast|__pthread_cond_signal|__pthread_cond_broadcast)$"),
    ("pthread_cond_wait/timedwait", r"^(pthread_cond_wait|pthread_cond_timedwait|___pthread_cond_wait|___pthread_cond_timedwait|__pthread_cond_wait|__pthread_cond_timedwait|pthread_cond_clockwait)$"),
    ("eventfd/event loop wake-up (write to eventfd)", r"^(eventfd_write|eventfd_read)$"),
]


def call_counts(p):
    out = collections.Counter()
    for (a, b), n in p.calls.items():
        if base(a) == base(b):
            continue
        bb = base(b)
        for label, pattern in CALLS:
            if re.match(pattern, bb):
                # count only calls entering the family from outside it (malloc -> _int_malloc etc. not twice)
                if not re.match(pattern, base(a)):
                    out[label] += n
                break
    return out


# Synchronous entry points whose inclusive cost tells the story: (label, regex on the demangled name).
# Each regex names one function (or a few that do not call each other); indented labels are parts of the
# row above. Async functions are left out: callgrind sees only their first partial function, the rest
# runs as later jobs (see the layer and thread tables for the task side).
ENTRY_POINTS = [
    ("socket read and all it drives on the event loop (BaseStreamSocketChannel.readFromSocket)",
     r"^NIOPosix\.BaseStreamSocketChannel\.readFromSocket\(\)"),
    ("  HTTP/2 inbound: NIOHTTP2Handler.channelRead", r"^NIOHTTP2\.NIOHTTP2Handler\.channelRead\(context"),
    ("    frame decode incl. HPACK decode (NIOHTTP2Handler.decodeFrame)", r"^NIOHTTP2\.NIOHTTP2Handler\.\(decodeFrame in"),
    ("      HPACK decode (HPACKDecoder.decodeHeaders)", r"^NIOHPACK\.HPACKDecoder\.decodeHeaders\(from"),
    ("    connection + stream state machine, inbound (HTTP2ConnectionStateMachine.receive*)",
     r"^NIOHTTP2\.HTTP2ConnectionStateMachine\.receive(Headers|Data|WindowUpdate|Settings|RstStream|Ping|Priority|GoAway)"),
    ("      of which request header block validation (HeaderBlockValidator<RequestBlockValidator>)",
     r"<NIOHTTP2\.\(RequestBlockValidator in [^>]*> of static .*validateBlock"),
    ("    new stream: child channel + pipeline + codec + NIOAsyncChannel + activation (HTTP2StreamChannel.configure)",
     r"^NIOHTTP2\.HTTP2StreamChannel\.configure\(initializer"),
    ("      of which NIOAsyncChannel.init(wrappingChannelSynchronously:)", r"NIOCore\.NIOAsyncChannel\.init\(wrappingChannelSynchronously"),
    ("    stream hand-off to the connection's accept loop (NIOHTTP2AsyncSequence.Continuation.yield)",
     r"^NIOHTTP2\.NIOHTTP2AsyncSequence\.Continuation\.yield\(any"),
    ("    frames into the stream pipeline, to the request task (HTTP2StreamChannel.deliverPendingReads)",
     r"^NIOHTTP2\.HTTP2StreamChannel\.\(deliverPendingReads in"),
    ("      HTTP2FramePayloadToHTTPServerCodec.channelRead (HPACKHeaders -> HTTPRequest)",
     r"^NIOHTTPTypesHTTP2\.HTTP2FramePayloadToHTTPServerCodec\.channelRead\(context"),
    ("  HTTP/1.1 inbound: ByteToMessageHandler<HTTPRequestDecoder>.channelRead (llhttp)", r"^NIOCore\.ByteToMessageHandler\.channelRead\(context"),
    ("  HTTP/1.1 -> HTTPTypes (HTTP1ToHTTPServerCodec.channelRead)", r"^NIOHTTPTypesHTTP1\.HTTP1ToHTTPServerCodec\.channelRead\(context"),
    ("response parts written on the event loop for the task (NIOAsyncChannelHandler._didYield)",
     r"^NIOCore\.NIOAsyncChannelHandler\._didYield\(sequence"),
    ("  HTTPTypes -> HTTP/2 frame payloads (HTTP2FramePayloadToHTTPServerCodec.write)",
     r"^NIOHTTPTypesHTTP2\.HTTP2FramePayloadToHTTPServerCodec\.write\(context"),
    ("  frames through NIOHTTP2Handler.write/flush to the socket (HTTP2StreamChannel.flush0)",
     r"^NIOHTTP2\.HTTP2StreamChannel\.flush0\(\)"),
    ("    connection + stream state machine, outbound (HTTP2ConnectionStateMachine.send*)",
     r"^NIOHTTP2\.HTTP2ConnectionStateMachine\.send(Headers|Data|WindowUpdate|Settings|RstStream|Ping|Priority|GoAway)"),
    ("      of which response header block validation (HeaderBlockValidator<ResponseBlockValidator>)",
     r"<NIOHTTP2\.\(ResponseBlockValidator in [^>]*> of static .*validateBlock"),
    ("    frame encode (HTTP2FrameEncoder.encode)", r"^NIOHTTP2\.HTTP2FrameEncoder\.encode\(frame"),
    ("      of which HPACK encode (HPACKEncoder.encode)", r"^NIOHPACK\.HPACKEncoder\.encode\(headers"),
    ("    stream closed: child channel close, pipeline teardown (HTTP2StreamChannel.receiveStreamClosed)",
     r"^NIOHTTP2\.HTTP2StreamChannel\.receiveStreamClosed\("),
    ("  Hummingbird HTTPConnectionStateHandler.write (HTTP/1.1)", r"^HummingbirdCore\.HTTPConnectionStateHandler\.write\(context"),
    ("    HTTP/1.1 response encode (HTTPResponseEncoder.write)", r"^NIOHTTP1\.HTTPResponseEncoder\.write\(context"),
    ("socket flush: writev (BaseSocketChannel.flushNow)", r"^NIOPosix\.BaseSocketChannel\.flushNow\(\)"),
    ("Hummingbird route lookup (RouterTrie.resolve)", r"^Hummingbird\.RouterTrie\.resolve\("),
    ("Hummingbird request id for the logger (RequestID.description)", r"^Hummingbird\.RequestID\.description"),
    ("JSON write of the reply (JSONValue.serialized / write(into:))",
     r"^GlimpseRPC\.JSONValue\.(serialized\(\)|write\(into: inout \[Swift\.UInt8\]\) -> \(\)$)"),
    ("JSON-RPC body parse (GlimpseJSON.JSONReader.parse into JSONValue)", r"GlimpseJSON\.JSONReader\.parse\("),
    ("classify params (ClassifyParams.init)", r"GlimpseRPC\.ClassifyParams\.init\(_: GlimpseRPC\.JSONValue"),
    ("base64 decode (Base64.decode)", r"^static GlimpseRPC\.Base64\.decode\("),
    ("decode job: image pipeline (ImagePipeline.preprocess)", r"^static GlimpseImage\.ImagePipeline\.preprocess\("),
    ("  PNG decode (PNGDecoder.decode: libspng, zlib)", r"^GlimpseImage\.PNGDecoder\.decode\(\)"),
    ("engine: the batch (CompiledModel.run)", r"^GlimpseEngine\.CompiledModel\.run\("),
    ("top-k and softmax (TopK.select, TopK.softmax)", r"GlimpseServing\.TopK\.(select|softmax)\("),
    ("request metrics (RPCMetrics.record)", r"GlimpseServer\.RPCMetrics\.record\("),
    ("metric handle look-ups (Dictionary<MetricHandles.Key, _>.find, all callers)",
     r"<GlimpseServing\.MetricHandles\.\(Key in [^>]*> of Swift\.__RawDictionaryStorage\.find"),
    ("Swift concurrency jobs, all of them (swift_job_run)", r"^swift_job_run$"),
]


def entry_points(p):
    names = p.names
    fns = set(p.self_cost) | {c for _, c in p.edges}
    incl_cache = {}
    out_edges = collections.defaultdict(list)
    in_edges = collections.defaultdict(list)
    for (a, b), v in p.edges.items():
        out_edges[a].append((b, v))
        in_edges[b].append((a, v))

    def incl(fn):
        if fn not in incl_cache:
            incl_cache[fn] = p.self_cost[fn] + sum(v for b, v in out_edges[fn] if base(b) != base(fn))
        return incl_cache[fn]

    results = []
    for label, pattern in ENTRY_POINTS:
        rx = re.compile(pattern)
        match = {fn for fn in fns if rx.search(names.get(fn, fn) or "") and not re.search(r"'\d+$", fn)}
        # Cost of the calls into the matched set from outside it, plus own cost of matched roots never
        # called (thread entry points). Nested matches are then inside their callers' edges.
        total = 0
        for fn in match:
            callers = in_edges[fn]
            outside = sum(v for a, v in callers if a not in match and base(a) != base(fn))
            if not callers:
                outside = incl(fn)
            total += outside
        calls = sum(n for (a, b), n in p.calls.items() if b in match and a not in match)
        results.append((label, total, calls, len(match)))
    return results


def fmt(n):
    return f"{n:,.0f}"


def pct(part, whole):
    return f"{100.0 * part / whole:.1f}%" if whole else "-"


def report(path, label, requests, top):
    p = Profile(path)
    per = p.total / requests
    print(f"### {label}\n")
    print(f"{fmt(p.total)} instructions for {requests:,} requests: **{fmt(per)} per request**.\n")

    print("Charged to the layer that causes it (shared runtime/library code charged to its first caller "
          "outside it):\n")
    print("| layer | instructions / request | share |\n|---|---:|---:|")
    for name, cost in charged(p).most_common(top):
        print(f"| {name} | {fmt(cost / requests)} | {pct(cost, p.total)} |")
    print()
    print("By thread (inclusive cost of each thread's entry function):\n")
    print("| thread | instructions / request | share |\n|---|---:|---:|")
    for name, cost in threads(p):
        if abs(cost) >= p.total * 0.001:
            print(f"| {name} | {fmt(cost / requests)} | {pct(cost, p.total)} |")
    print()
    print("Where the instructions execute (exclusive, by kind):\n")
    print("| kind | instructions / request | share |\n|---|---:|---:|")
    for name, cost in by_kind(p).most_common(top):
        print(f"| {name} | {fmt(cost / requests)} | {pct(cost, p.total)} |")
    print()
    for label in ("generic metadata lookups, casts, conformances",
                  "exclusivity checks (swift_beginAccess/endAccess, their thread-local access set)"):
        rows = charged_functions(p, label)
        total = sum(rows.values())
        if total < p.total * 0.01:
            continue
        print(f"{label}: {fmt(total / requests)} per request, by the type of the program function that causes it "
              "(for metadata, mostly the accessor of the generic type itself):\n")
        families = collections.Counter()
        for fn, cost in rows.items():
            families[type_family(p.names.get(fn, fn)) if fn != ROOTS else ROOTS] += cost
        print("| type (module.type of the causing function) | instructions / request | share |\n|---|---:|---:|")
        for fam, cost in families.most_common(12):
            print(f"| `{fam}` | {fmt(cost / requests)} | {pct(cost, p.total)} |")
        print()
    print("Inclusive cost of entry points (a function's own instructions and its callees'; synchronous "
          "calls only, so an async function's later parts are not under it; groups overlap):\n")
    print("| entry point | instructions / request | share | calls / request |\n|---|---:|---:|---:|")
    for name, cost, calls, n in entry_points(p):
        if cost < p.total * 0.001:
            continue
        print(f"| {name} | {fmt(cost / requests)} | {pct(cost, p.total)} | {calls / requests:.2f} |")
    print()
    print("Calls per request:\n")
    print("| function | calls / request |\n|---|---:|")
    counts = call_counts(p)
    for name, _ in CALLS:
        if counts[name]:
            print(f"| {name} | {counts[name] / requests:.2f} |")
    print()
    print(f"Top {top} functions by own instructions:\n")
    print("| function | object | instructions / request | share |\n|---|---|---:|---:|")
    for fn, cost in p.self_cost.most_common(top):
        name = short(p.names.get(fn, fn))
        print(f"| `{name}` | {(p.obj.get(fn) or '?').rsplit('/', 1)[-1]} | {fmt(cost / requests)} | {pct(cost, p.total)} |")
    print()


def short(name, limit=150):
    name = name.replace("|", "\\|")
    return name if len(name) <= limit else name[:limit - 1] + "…"


def engine_cost(p):
    """Inclusive instructions of GlimpseEngine.CompiledModel.run (0 when the engine did not run)."""
    total = 0
    for fn in set(p.self_cost) | {b for _, b in p.edges}:
        if re.match(r"^GlimpseEngine\.CompiledModel\.run\(", p.names.get(fn, fn)) and not re.search(r"'\d+$", fn):
            total += sum(v for (a, b), v in p.edges.items() if b == fn and not re.match(
                r"^GlimpseEngine\.CompiledModel\.run\(", p.names.get(a, a)))
    return total


def table(specs):
    print("| scenario | requests | instructions / request | outside the engine | malloc | swift_allocObject "
          "| retain + release | generic metadata look-ups | write syscalls | read syscalls |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for spec in specs:
        path, label, requests = spec.rsplit(":", 2)
        n = int(requests)
        p = Profile(path)
        c = call_counts(p)
        engine = engine_cost(p)
        outside = fmt((p.total - engine) / n) if engine else ""
        print(f"| {label} | {n:,} | {fmt(p.total / n)} | {outside} | {c['malloc'] / n:.1f} "
              f"| {c['swift_allocObject'] / n:.1f} "
              f"| {(c['swift_retain (+_n, unknown, bridge)'] + c['swift_release (+_n, unknown, bridge)']) / n:.0f} "
              f"| {c['swift_getGenericMetadata'] / n:.0f} | {c['write/writev/sendmsg'] / n:.2f} "
              f"| {c['read/readv/recvmsg'] / n:.2f} |")


def grep(path, requests, pattern):
    p = Profile(path)
    rx = re.compile(pattern)
    out_edges = collections.defaultdict(int)
    for (a, b), v in p.edges.items():
        if base(a) != base(b):
            out_edges[a] += v
    rows = []
    for fn in set(p.self_cost) | {b for _, b in p.edges}:
        name = p.names.get(fn, fn)
        if rx.search(name):
            calls = sum(n for (a, b), n in p.calls.items() if b == fn)
            rows.append((p.self_cost[fn] + out_edges[fn], p.self_cost[fn], calls, name))
    for incl, own, calls, name in sorted(rows, reverse=True)[:60]:
        print(f"{incl / requests:12,.0f} incl {own / requests:10,.0f} self {calls / requests:8.2f} calls  {short(name, 220)}")


def main(argv):
    if not argv:
        print(__doc__)
        return 2
    cmd = argv[0]
    if cmd == "table":
        table(argv[1:])
    elif cmd == "report":
        top = 25
        if "--top" in argv:
            i = argv.index("--top")
            top = int(argv[i + 1])
            argv = argv[:i] + argv[i + 2:]
        report(argv[1], argv[2], int(argv[3]), top)
    elif cmd == "grep":
        grep(argv[1], int(argv[2]), argv[3])
    elif cmd in ("callers", "callees"):
        neighbours(argv[1], int(argv[2]), argv[3], cmd)
    else:
        print(__doc__)
        return 2
    return 0




def neighbours(path, requests, pattern, direction, limit=40):
    """Callers (direction "callers") or callees of the functions matching PATTERN, by edge cost."""
    p = Profile(path)
    rx = re.compile(pattern)
    rows = collections.Counter()
    counts = collections.Counter()
    for (a, b), v in p.edges.items():
        target, other = (b, a) if direction == "callers" else (a, b)
        if rx.search(p.names.get(target, target)):
            rows[other] += v
            counts[other] += p.calls[(a, b)]
    for fn, v in rows.most_common(limit):
        print(f"{v / requests:12,.0f} incl {counts[fn] / requests:8.2f} calls  {short(p.names.get(fn, fn), 220)}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
