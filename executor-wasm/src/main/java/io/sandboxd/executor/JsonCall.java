package io.sandboxd.executor;

import com.fasterxml.jackson.databind.JsonNode;
import io.sandboxd.attest.AttestException;
import io.sandboxd.attest.CanonicalJson;
import java.util.Iterator;
import java.util.Set;

/**
 * The guest's side of one {@code (req, len, out, cap, len_out)} import (egress, exec, infer): where
 * its JSON request lies and where its answer goes.
 */
record JsonCall(GuestMemory mem, long reqPtr, long reqLen, long outPtr, long cap, long lenOut) {

  /** True when the request is longer than {@code max} bytes, its length read as the guest's u32. */
  boolean longerThan(long max) {
    return (reqLen & 0xffffffffL) > max;
  }

  /** Reads the JSON request; ends the call with FAULT for a bad range, INVALID for bad JSON. */
  JsonNode request() {
    byte[] raw = mem.readChecked(reqPtr, reqLen);
    if (raw == null || !mem.inBounds(lenOut, 4) || !mem.inBounds(outPtr, cap)) {
      throw new SandboxImports.CallEnded(AbiStatus.FAULT);
    }
    try {
      return CanonicalJson.parse(raw);
    } catch (AttestException e) {
      throw new SandboxImports.CallEnded(AbiStatus.INVALID);
    }
  }

  /** Hands an answer to the guest: its status, or its payload into {@code (out, cap, len_out)}. */
  int deliver(HostAnswer a) {
    return SandboxImports.deliver(mem, a, outPtr, cap, lenOut);
  }

  /**
   * Checks that a request is an object of no fields but {@code fields}; an {@link
   * IllegalArgumentException} names the unknown field otherwise.
   */
  static void requireFields(JsonNode json, Set<String> fields) {
    if (!json.isObject()) {
      throw new IllegalArgumentException("request: expected an object");
    }
    for (Iterator<String> it = json.fieldNames(); it.hasNext(); ) {
      String f = it.next();
      if (!fields.contains(f)) {
        throw new IllegalArgumentException("request." + f + ": unknown field");
      }
    }
  }
}
