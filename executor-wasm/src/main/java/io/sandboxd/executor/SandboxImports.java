package io.sandboxd.executor;

import com.dylibso.chicory.runtime.HostFunction;
import com.dylibso.chicory.runtime.Instance;
import com.dylibso.chicory.wasm.types.FunctionType;
import com.dylibso.chicory.wasm.types.ValType;
import io.sandboxd.attest.CanonicalJson;
import io.sandboxd.enforcer.Decision;
import io.sandboxd.enforcer.HostService;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The `sandbox` import namespace (ABI.md): each function asks the Enforcer first, answers a denial
 * with a status code, never a trap, and journals every nondeterministic input it hands the guest.
 */
final class SandboxImports {
  static final String NAMESPACE = "sandbox";

  private static final Map<String, FunctionType> SIGNATURES = new TreeMap<>();

  static {
    SIGNATURES.put("log", FunctionType.of(List.of(ValType.I32, ValType.I32), List.of(ValType.I32)));
    SIGNATURES.put("clock_now", FunctionType.of(List.of(ValType.I32), List.of(ValType.I32)));
    SIGNATURES.put("random_u64", FunctionType.of(List.of(ValType.I32), List.of(ValType.I32)));
    SIGNATURES.put("yield_point", FunctionType.of(List.of(), List.of(ValType.I32)));
  }

  private SandboxImports() {}

  static FunctionType signature(String name) {
    return SIGNATURES.get(name);
  }

  static String names() {
    return String.join(", ", SIGNATURES.keySet());
  }

  static List<HostFunction> functions(RunContext ctx) {
    List<HostFunction> fns = new ArrayList<>();
    fns.add(fn("log", (inst, args) -> log(ctx, inst, args[0], args[1])));
    fns.add(fn("clock_now", (inst, args) -> clockNow(ctx, inst, args[0])));
    fns.add(fn("random_u64", (inst, args) -> randomU64(ctx, inst, args[0])));
    fns.add(fn("yield_point", (inst, args) -> yieldPoint(ctx)));
    return fns;
  }

  private interface Body {
    int call(Instance instance, long[] args);
  }

  private static HostFunction fn(String name, Body body) {
    return new HostFunction(
        NAMESPACE, name, SIGNATURES.get(name), (inst, args) -> new long[] {body.call(inst, args)});
  }

  static int status(Decision d) {
    if (d instanceof Decision.Denied) {
      return AbiStatus.DENIED;
    }
    return d instanceof Decision.Tainted ? AbiStatus.TAINTED : AbiStatus.OK;
  }

  private static int log(RunContext ctx, Instance inst, long ptr, long len) {
    Decision d = ctx.enforcer.mayHost(HostService.LOGGING);
    if (!d.allowed()) {
      ctx.countCall();
      return status(d);
    }
    GuestMemory mem = new GuestMemory(inst.memory());
    if (!mem.inBounds(ptr, len)) {
      ctx.countCall();
      return AbiStatus.FAULT;
    }
    if ((len & 0xffffffffL) > RunContext.MAX_LOG_BYTES) {
      ctx.countCall();
      return AbiStatus.INVALID;
    }
    byte[] msg = mem.read(ptr, len);
    try {
      StandardCharsets.UTF_8
          .newDecoder()
          .onMalformedInput(CodingErrorAction.REPORT)
          .onUnmappableCharacter(CodingErrorAction.REPORT)
          .decode(ByteBuffer.wrap(msg));
    } catch (CharacterCodingException e) {
      ctx.countCall();
      return AbiStatus.INVALID;
    }
    ctx.appendLog(msg);
    return AbiStatus.OK;
  }

  private static int clockNow(RunContext ctx, Instance inst, long outPtr) {
    ctx.countCall();
    GuestMemory mem = new GuestMemory(inst.memory());
    if (!mem.inBounds(outPtr, 8)) {
      return AbiStatus.FAULT;
    }
    Decision d = ctx.enforcer.mayHost(HostService.CLOCK);
    // Not granted: the normalized constant, never an error and never the wall clock (§7.5).
    long nanos = d.allowed() ? ctx.clockNanos.getAsLong() : ctx.clockConstantMs * 1_000_000L;
    byte[] response = le64(nanos);
    ctx.journal.record(
        "clock_now", CanonicalJson.mapper().createObjectNode(), response, d.name(), ctx.taint());
    mem.writeLong(outPtr, nanos);
    return AbiStatus.OK;
  }

  private static int randomU64(RunContext ctx, Instance inst, long outPtr) {
    ctx.countCall();
    GuestMemory mem = new GuestMemory(inst.memory());
    if (!mem.inBounds(outPtr, 8)) {
      return AbiStatus.FAULT;
    }
    Decision d = ctx.enforcer.mayHost(HostService.RANDOM);
    if (!d.allowed()) {
      ctx.journal.record(
          "random_u64",
          CanonicalJson.mapper().createObjectNode(),
          new byte[0],
          d.name(),
          ctx.taint());
      return status(d);
    }
    long v = ctx.random.nextLong();
    ctx.journal.record(
        "random_u64", CanonicalJson.mapper().createObjectNode(), le64(v), d.name(), ctx.taint());
    mem.writeLong(outPtr, v);
    return AbiStatus.OK;
  }

  private static int yieldPoint(RunContext ctx) {
    ctx.countCall();
    // Parking arrives with durable runs; until then the supervisor always answers OK.
    ctx.journal.record(
        "yield_point",
        CanonicalJson.mapper().createObjectNode(),
        le64(AbiStatus.OK),
        "Allow",
        ctx.taint());
    return AbiStatus.OK;
  }

  static byte[] le64(long v) {
    return ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(v).array();
  }
}
