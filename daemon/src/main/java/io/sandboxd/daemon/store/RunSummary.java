package io.sandboxd.daemon.store;

/** One run as listed: its ids, outcome, chain length and head address. */
public record RunSummary(
    String runId,
    long createdMs,
    String unit,
    String grantsId,
    String outcomeJson,
    int segments,
    String head,
    String log) {}
