package io.sandboxd.executor;

/**
 * The memory limits an instance is made with: the pages its linear memory may grow to and the heap
 * bytes its memory, tables and globals may hold together. A prepared instance serves only a run
 * whose limits are the same (Chicory fixes a memory's maximum when it is made).
 */
public record InstanceShape(int limitPages, long capBytes) {}
