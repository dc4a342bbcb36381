package io.sandboxd.enforcer;

import java.util.Collection;
import java.util.Collections;
import java.util.SortedSet;
import java.util.TreeSet;

/**
 * The origin labels of untrusted data a run has read (WIRE.md §3.3). It only grows: there is no way
 * to remove a label. One instance belongs to one run; it is not thread-safe.
 */
public final class RunTaint {
  private final TreeSet<String> labels = new TreeSet<>();

  /** A run that has read nothing untrusted yet. */
  public RunTaint() {}

  /** Adds labels (the result of {@link Enforcer#taints}); returns true if the taint grew. */
  public boolean add(Collection<String> more) {
    return labels.addAll(more);
  }

  /** True while the run has read nothing untrusted. */
  public boolean isEmpty() {
    return labels.isEmpty();
  }

  /** True when the run carries {@code label}. */
  public boolean contains(String label) {
    return labels.contains(label);
  }

  /** A sorted snapshot of the labels. */
  public SortedSet<String> labels() {
    return Collections.unmodifiableSortedSet(new TreeSet<>(labels));
  }

  @Override
  public String toString() {
    return labels.toString();
  }
}
