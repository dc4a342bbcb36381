package io.sandboxd.benchmarks;

import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The run settings of the in-process microbenchmarks (calls of nanoseconds to microseconds): 3 × 1
 * s of warm-up, 5 × 1 s measured, one fork, state per thread. JMH reads these annotations through
 * the subclass; each subclass names its own mode and time unit.
 */
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
@State(Scope.Thread)
public abstract class MicroBench {}
