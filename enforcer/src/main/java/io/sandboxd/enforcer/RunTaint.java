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
  private final SortedSet<String> view = Collections.unmodifiableSortedSet(labels);

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

  /**
   * The labels, sorted: a read-only live view, so asking costs nothing on the per-call paths that
   * ask (every journal entry, every sink decision). Copy it to keep a snapshot.
   */
  public SortedSet<String> labels() {
    return view;
  }

  @Override
  public String toString() {
    return labels.toString();
  }
}
