package io.sandboxd.daemon.report;

import io.sandboxd.attest.Provenance;

/** One row of a report table, written cell by cell: the markup every table's rows share. */
final class TableRow {
  private final StringBuilder b;

  private TableRow(StringBuilder b) {
    this.b = b;
  }

  /** Starts a row in {@code b}. */
  static TableRow in(StringBuilder b) {
    b.append("<tr>");
    return new TableRow(b);
  }

  /** Starts a row of the CSS class {@code cssClass} in {@code b}. */
  static TableRow in(StringBuilder b, String cssClass) {
    b.append("<tr class=\"").append(cssClass).append("\">");
    return new TableRow(b);
  }

  /** A header cell of HTML, as given. */
  TableRow header(String html) {
    b.append("<th>").append(html).append("</th>");
    return this;
  }

  /** A cell of HTML, as given. */
  TableRow cell(String html) {
    b.append("<td>").append(html).append("</td>");
    return this;
  }

  /** A cell of {@code text} as code. */
  TableRow code(String text) {
    return cell("<code>" + Html.esc(text) + "</code>");
  }

  /** A right-aligned number, as it is. */
  TableRow number(long v) {
    b.append("<td class=\"n\">").append(v).append("</td>");
    return this;
  }

  /** A right-aligned figure with a thousands separator ({@link Html#uj}). */
  TableRow uj(long v) {
    b.append("<td class=\"n\">").append(Html.uj(v)).append("</td>");
    return this;
  }

  /** A cell of HTML in the colour of provenance {@code p}. */
  TableRow provenance(Provenance p, String html) {
    b.append("<td class=\"prov-").append(p).append("\">").append(html).append("</td>");
    return this;
  }

  /** Ends the row and its line. */
  void end() {
    b.append("</tr>\n");
  }
}
