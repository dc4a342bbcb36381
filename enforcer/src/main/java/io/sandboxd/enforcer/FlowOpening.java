package io.sandboxd.enforcer;

import java.util.List;
import java.util.TreeSet;

/** One {@code open} entry of a flow grant: the origin labels a tainted run may send to a sink. */
public record FlowOpening(SinkPattern sink, List<String> origins)
    implements Comparable<FlowOpening> {

  public FlowOpening {
    origins = List.copyOf(new TreeSet<>(origins));
  }

  @Override
  public int compareTo(FlowOpening o) {
    int c = sink.compareTo(o.sink);
    return c != 0 ? c : String.join("\n", origins).compareTo(String.join("\n", o.origins));
  }
}
