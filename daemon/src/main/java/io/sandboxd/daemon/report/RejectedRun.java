package io.sandboxd.daemon.report;

/** A run the report does not draw: where its evidence failed and why. */
public record RejectedRun(String runId, String where, String reason) {}
