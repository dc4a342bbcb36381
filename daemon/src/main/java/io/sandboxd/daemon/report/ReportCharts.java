package io.sandboxd.daemon.report;

import io.sandboxd.attest.DeviceClass;
import io.sandboxd.attest.Provenance;
import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.awt.Paint;
import java.awt.geom.Rectangle2D;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jfree.chart.ChartRenderingInfo;
import org.jfree.chart.JFreeChart;
import org.jfree.chart.axis.CategoryAxis;
import org.jfree.chart.axis.CategoryLabelPositions;
import org.jfree.chart.axis.NumberAxis;
import org.jfree.chart.plot.CategoryPlot;
import org.jfree.chart.plot.PlotOrientation;
import org.jfree.chart.renderer.category.BarRenderer;
import org.jfree.chart.renderer.category.StandardBarPainter;
import org.jfree.chart.title.LegendTitle;
import org.jfree.chart.title.TextTitle;
import org.jfree.chart.ui.RectangleEdge;
import org.jfree.data.category.DefaultCategoryDataset;
import org.jfree.svg.SVGGraphics2D;

/**
 * The report's plots, drawn by JFreeChart onto JFreeSVG as inline SVG. Element hinting is on, so
 * every drawn bar segment is its own {@code <g>} naming its series and item: the page can be
 * checked for what was drawn, not just that something was.
 */
public final class ReportCharts {
  private ReportCharts() {}

  /** Width and height of each plot, px. */
  static final int WIDTH = 880;

  static final int HEIGHT = 320;

  /** Series colours: outcomes and provenances each keep one colour wherever they appear. */
  private static final Map<String, Color> COLOURS =
      Map.of(
          "Completed", new Color(0x2e7d32),
          "Failed", new Color(0x8e24aa),
          "Terminated", new Color(0xc62828),
          "Declined", new Color(0xef6c00),
          "HwShunt", new Color(0x1565c0),
          "ModelBased", new Color(0x00897b),
          "Estimator", new Color(0x9e9d24),
          "Idle", new Color(0x757575));

  /** Label of a provenance as a series: what the operator needs to know about the figure. */
  public static String provenanceSeries(Provenance p) {
    return switch (p) {
      case HwShunt -> "measured (HwShunt)";
      case ModelBased -> "measured, apportioned (ModelBased)";
      case Estimator -> "estimated (Estimator)";
    };
  }

  /** Runs started per bucket, stacked by outcome; every bucket of the span is a category. */
  public static String runsOverTime(ReportAggregates a) {
    DefaultCategoryDataset d = new DefaultCategoryDataset();
    if (!a.runsByBucket().isEmpty()) {
      long first = a.runsByBucket().firstKey();
      long last = a.runsByBucket().lastKey();
      for (long b = first; b <= last; b += a.bucketMs()) {
        // A category with no value still gets its slot on the axis (the gaps are information).
        d.addValue(null, "Completed", bucketLabel(b, a.bucketMs()));
      }
    }
    for (String kind : kinds(a)) {
      for (Map.Entry<Long, Map<String, Long>> e : a.runsByBucket().entrySet()) {
        Long n = e.getValue().get(kind);
        if (n != null && n > 0) {
          d.addValue(n, kind, bucketLabel(e.getKey(), a.bucketMs()));
        }
      }
    }
    dropEmptySeries(d);
    return svg(
        "runs",
        "Runs started per " + bucketName(a.bucketMs()) + ", by outcome",
        "runs",
        d,
        PlotOrientation.VERTICAL);
  }

  /** Active energy per device class and idle energy apart, stacked by provenance, µJ. */
  public static String energyByClass(ReportAggregates a) {
    DefaultCategoryDataset d = new DefaultCategoryDataset();
    for (Provenance p : Provenance.values()) {
      for (Map.Entry<DeviceClass, Map<Provenance, Long>> e : a.energyByClass().entrySet()) {
        put(d, e.getValue().get(p), provenanceSeries(p), e.getKey().jsonName());
      }
      put(d, a.warmIdleByProvenance().get(p), provenanceSeries(p), "idle: warm claims");
      put(d, a.parkedIdleByProvenance().get(p), provenanceSeries(p), "idle: parked");
    }
    return svg(
        "energy-class",
        "Energy per device class (idle apart), by provenance",
        "µJ",
        d,
        PlotOrientation.VERTICAL);
  }

  /** The top usages by total energy: active by provenance, idle as its own series, µJ. */
  public static String usage(String id, String title, List<ReportAggregates.Usage> top) {
    DefaultCategoryDataset d = new DefaultCategoryDataset();
    for (Provenance p : Provenance.values()) {
      for (ReportAggregates.Usage u : top) {
        put(d, u.activeByProvenance().get(p), provenanceSeries(p), shortKey(u.key()));
      }
    }
    for (ReportAggregates.Usage u : top) {
      put(d, u.idleUj(), "idle (warm claims, parked)", shortKey(u.key()));
    }
    return svg(id, title, "µJ", d, PlotOrientation.HORIZONTAL);
  }

  /** A module address or a submitter as a category label: 12 hex digits are enough to tell. */
  static String shortKey(String key) {
    return key.matches("[0-9a-f]{64}") ? key.substring(0, 12) + "…" : key;
  }

  private static void put(DefaultCategoryDataset d, Long v, String series, String category) {
    if (v != null && v > 0) {
      d.addValue(v, series, category);
    }
  }

  private static List<String> kinds(ReportAggregates a) {
    LinkedHashMap<String, Boolean> kinds = new LinkedHashMap<>();
    ReportAggregates.OUTCOMES.forEach(k -> kinds.put(k, true));
    a.runsByBucket().values().forEach(m -> m.keySet().forEach(k -> kinds.put(k, true)));
    return List.copyOf(kinds.keySet());
  }

  private static void dropEmptySeries(DefaultCategoryDataset d) {
    for (int s = d.getRowCount() - 1; s >= 0; s--) {
      boolean any = false;
      for (int c = 0; c < d.getColumnCount() && !any; c++) {
        any = d.getValue(s, c) != null;
      }
      if (!any) {
        d.removeRow(s);
      }
    }
  }

  private static String svg(
      String id, String title, String unit, DefaultCategoryDataset d, PlotOrientation o) {
    CategoryAxis x = new CategoryAxis();
    NumberAxis y = new NumberAxis(unit);
    y.setStandardTickUnits(NumberAxis.createIntegerTickUnits());
    // Grouped, not stacked: JFreeChart's stacked renderer emits no per-item element groups.
    BarRenderer r = new BarRenderer();
    r.setItemMargin(0.0);
    r.setBarPainter(new StandardBarPainter());
    r.setShadowVisible(false);
    r.setDrawBarOutline(false);
    r.setMaximumBarWidth(0.05);
    CategoryPlot plot = new CategoryPlot(d, x, y, r);
    plot.setOrientation(o);
    plot.setBackgroundPaint(Color.WHITE);
    plot.setRangeGridlinePaint(new Color(0xdddddd));
    plot.setRangeGridlineStroke(new BasicStroke(1f));
    plot.setOutlineVisible(false);
    if (o == PlotOrientation.VERTICAL && d.getColumnCount() > 12) {
      x.setCategoryLabelPositions(CategoryLabelPositions.UP_45);
    }
    for (int s = 0; s < d.getRowCount(); s++) {
      r.setSeriesPaint(s, colour(d.getRowKey(s).toString()));
    }
    JFreeChart chart = new JFreeChart(null, new Font(Font.SANS_SERIF, Font.PLAIN, 12), plot, true);
    chart.setTitle(new TextTitle(title, new Font(Font.SANS_SERIF, Font.BOLD, 14)));
    chart.setBackgroundPaint(Color.WHITE);
    chart.setElementHinting(true);
    LegendTitle legend = chart.getLegend();
    legend.setPosition(RectangleEdge.BOTTOM);
    legend.setFrame(org.jfree.chart.block.BlockBorder.NONE);
    SVGGraphics2D g2 = new SVGGraphics2D(WIDTH, HEIGHT);
    // Several plots share one page: their clip paths and gradients must not share ids.
    g2.setDefsKeyPrefix(id + "-");
    // Element hints reach the renderer only through rendering info.
    chart.draw(g2, new Rectangle2D.Double(0, 0, WIDTH, HEIGHT), new ChartRenderingInfo());
    return g2.getSVGElement("plot-" + id);
  }

  private static Paint colour(String series) {
    for (Map.Entry<String, Color> c : COLOURS.entrySet()) {
      if (series.contains(c.getKey())
          || series
              .toLowerCase(java.util.Locale.ROOT)
              .startsWith(c.getKey().toLowerCase(java.util.Locale.ROOT))) {
        return c.getValue();
      }
    }
    return Color.DARK_GRAY;
  }

  private static String bucketLabel(long ms, long bucket) {
    String pattern = bucket < 86_400_000L ? "MM-dd HH:mm" : "yyyy-MM-dd";
    return DateTimeFormatter.ofPattern(pattern)
        .withZone(ZoneOffset.UTC)
        .format(Instant.ofEpochMilli(ms));
  }

  private static String bucketName(long bucket) {
    if (bucket == 60_000L) {
      return "minute (UTC)";
    }
    if (bucket == 3_600_000L) {
      return "hour (UTC)";
    }
    if (bucket == 86_400_000L) {
      return "day (UTC)";
    }
    return (bucket / 86_400_000L) + " days (UTC)";
  }
}
