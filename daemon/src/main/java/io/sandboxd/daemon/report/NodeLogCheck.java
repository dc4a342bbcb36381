package io.sandboxd.daemon.report;

import java.util.Optional;

/**
 * The node-log checkpoint a report was checked against: the signed note, what it says, whether it
 * verified against the node key ({@code failure} empty) and how many runs were proven included.
 */
public record NodeLogCheck(
    String note,
    String origin,
    long treeSize,
    String rootHex,
    Optional<String> failure,
    long runsProven) {}
