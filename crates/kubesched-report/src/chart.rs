//! Charts as inline SVG, one piece for every page that draws them (`capacity --html`,
//! `rollout --html`): a typed [`Chart`] (categories, one or more series of values)
//! is laid out here into a [`Drawing`] of plain shapes, and the `chart.html` template
//! (included by the pages, HTML-escaping every label) writes it as `<svg>` with a
//! tooltip (`<title>`) on every bar and point and a legend. No script, no network.
//!
//! Three shapes cover the pages: [`Kind::Columns`] (categories along the x axis, the
//! series stacked: pods per rollout step), [`Kind::Lines`] (the same axis, one line per
//! series: utilisation per step) and [`Kind::Bars`] (one row per category, long names
//! on the left, the series side by side: copies per node or zone).

/// How the values are drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Vertical columns, one per category, the series stacked.
    Columns,
    /// One line per series over the categories.
    Lines,
    /// Horizontal bars, one row per category, the series side by side.
    Bars,
}

/// One series: a name for the legend and a value per category.
#[derive(Clone, Debug)]
pub struct Series {
    /// The legend's name.
    pub name: String,
    /// One value per category (missing ones count as 0).
    pub values: Vec<f64>,
}

/// A chart: what it shows, its categories and its series.
#[derive(Clone, Debug)]
pub struct Chart {
    /// A short id, unique on the page (`rollout-pods`): the `<figure>`'s id.
    pub id: &'static str,
    /// The heading.
    pub title: String,
    /// What a value counts (`pods`, `%`), in tooltips and on the axis.
    pub unit: &'static str,
    /// How the values are drawn.
    pub kind: Kind,
    /// The categories, in order (steps, zones, nodes).
    pub categories: Vec<String>,
    /// The series, in legend order.
    pub series: Vec<Series>,
    /// The top of the value axis when it is fixed (100 for percentages); otherwise a
    /// round number above the largest value.
    pub max: Option<f64>,
}

/// A rectangle (a bar or a stacked segment) with its tooltip.
#[derive(Debug)]
pub struct Rect {
    /// Left edge.
    pub x: f64,
    /// Top edge.
    pub y: f64,
    /// Width.
    pub w: f64,
    /// Height.
    pub h: f64,
    /// Its series (0-based: the colour).
    pub series: usize,
    /// The tooltip: category, series and value.
    pub tip: String,
}

/// A line of one series, with a dot (and tooltip) at each category.
#[derive(Debug)]
pub struct Line {
    /// The series (the colour).
    pub series: usize,
    /// `x,y x,y ...` for `<polyline points>`.
    pub points: String,
    /// (x, y, tooltip) per category.
    pub dots: Vec<(f64, f64, String)>,
}

/// A text label: position, anchor (`start`, `middle`, `end`) and words.
#[derive(Debug)]
pub struct Label {
    /// x.
    pub x: f64,
    /// y (the baseline).
    pub y: f64,
    /// `text-anchor`.
    pub anchor: &'static str,
    /// The words (escaped by the template).
    pub text: String,
}

/// A chart laid out: what the template draws.
#[derive(Debug)]
pub struct Drawing {
    /// The figure's id.
    pub id: &'static str,
    /// The heading.
    pub title: String,
    /// The `viewBox` width.
    pub width: f64,
    /// The `viewBox` height.
    pub height: f64,
    /// Horizontal grid lines across the plot: (y, x from, x to).
    pub grid: Vec<(f64, f64, f64)>,
    /// The bars.
    pub rects: Vec<Rect>,
    /// The lines.
    pub lines: Vec<Line>,
    /// Axis labels and values.
    pub labels: Vec<Label>,
    /// The legend: (series index, name); empty with one series.
    pub legend: Vec<(usize, String)>,
    /// A sentence saying what the chart shows, for screen readers.
    pub summary: String,
}

/// The `viewBox` width of every chart; the page scales it.
const WIDTH: f64 = 720.0;
/// Height of the plot of a Columns or Lines chart.
const PLOT: f64 = 200.0;
/// Room left of the plot for the value axis.
const AXIS: f64 = 44.0;
/// Room below the plot for the category labels.
const BELOW: f64 = 26.0;
/// Height of one series' bar in a Bars chart.
const BAR: f64 = 14.0;
/// Room on the left of a Bars chart for the names, and on the right for the values.
const NAMES: f64 = 230.0;
const VALUES: f64 = 70.0;
/// Names longer than this are cut on the chart (whole in the tooltip).
const NAME_CHARS: usize = 34;

impl Chart {
    /// Lays the chart out.
    pub fn draw(&self) -> Drawing {
        let mut d = Drawing {
            id: self.id,
            title: self.title.clone(),
            width: WIDTH,
            height: 0.0,
            grid: Vec::new(),
            rects: Vec::new(),
            lines: Vec::new(),
            labels: Vec::new(),
            legend: if self.series.len() > 1 {
                self.series
                    .iter()
                    .enumerate()
                    .map(|(i, s)| (i, s.name.clone()))
                    .collect()
            } else {
                Vec::new()
            },
            summary: format!(
                "{}: {} categories, series {}",
                self.title,
                self.categories.len(),
                self.series
                    .iter()
                    .map(|s| s.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        match self.kind {
            Kind::Columns | Kind::Lines => self.draw_over_x(&mut d),
            Kind::Bars => self.draw_bars(&mut d),
        }
        d
    }

    fn value(&self, series: usize, category: usize) -> f64 {
        self.series[series]
            .values
            .get(category)
            .copied()
            .unwrap_or(0.0)
    }

    fn tip(&self, series: usize, category: usize) -> String {
        let v = show(self.value(series, category), self.unit);
        match self.series.len() {
            1 => format!("{}: {v}", self.categories[category]),
            _ => format!(
                "{}: {} {v}",
                self.categories[category], self.series[series].name
            ),
        }
    }

    /// Columns and Lines: categories along x, values up.
    fn draw_over_x(&self, d: &mut Drawing) {
        let n = self.categories.len().max(1);
        let stacked = self.kind == Kind::Columns;
        let largest = (0..self.categories.len())
            .map(|c| {
                let vals = (0..self.series.len()).map(|s| self.value(s, c));
                if stacked {
                    vals.sum()
                } else {
                    vals.fold(0.0, f64::max)
                }
            })
            .fold(0.0, f64::max);
        let (top, step) = axis(self.max.unwrap_or(largest));
        let plot_w = WIDTH - AXIS - 8.0;
        let slot = plot_w / n as f64;
        let y_of = |v: f64| 8.0 + PLOT - v / top * PLOT;
        let mut tick = 0.0;
        while tick <= top + 1e-9 {
            d.grid.push((y_of(tick), AXIS, WIDTH - 8.0));
            d.labels.push(Label {
                x: AXIS - 6.0,
                y: y_of(tick) + 4.0,
                anchor: "end",
                // The unit is in the tooltips; the axis keeps only `%`.
                text: show(tick, if self.unit == "%" { "%" } else { "" }),
            });
            tick += step;
        }
        // Every k-th category is labelled so that the labels do not overlap.
        let every = (n as f64 * 34.0 / plot_w).ceil().max(1.0) as usize;
        for (c, name) in self.categories.iter().enumerate() {
            let x = AXIS + slot * c as f64;
            if c % every == 0 {
                d.labels.push(Label {
                    x: x + slot / 2.0,
                    y: 8.0 + PLOT + 16.0,
                    anchor: "middle",
                    text: cut(name),
                });
            }
            if stacked {
                let mut base = 0.0;
                for s in 0..self.series.len() {
                    let v = self.value(s, c);
                    if v > 0.0 {
                        let w = (slot * 0.7).max(1.0);
                        d.rects.push(Rect {
                            x: x + (slot - w) / 2.0,
                            y: y_of(base + v),
                            w,
                            h: y_of(base) - y_of(base + v),
                            series: s,
                            tip: self.tip(s, c),
                        });
                    }
                    base += v;
                }
            }
        }
        if !stacked {
            for s in 0..self.series.len() {
                let dots: Vec<(f64, f64, String)> = (0..self.categories.len())
                    .map(|c| {
                        let x = AXIS + slot * c as f64 + slot / 2.0;
                        (x, y_of(self.value(s, c)), self.tip(s, c))
                    })
                    .collect();
                let points = dots
                    .iter()
                    .map(|(x, y, _)| format!("{x:.1},{y:.1}"))
                    .collect::<Vec<_>>()
                    .join(" ");
                d.lines.push(Line {
                    series: s,
                    points,
                    dots,
                });
            }
        }
        d.height = 8.0 + PLOT + BELOW;
    }

    /// Bars: a row per category, names on the left, values on the right.
    fn draw_bars(&self, d: &mut Drawing) {
        let per_row = self.series.len().max(1) as f64 * BAR + 8.0;
        let largest = self
            .series
            .iter()
            .flat_map(|s| s.values.iter().copied())
            .fold(0.0, f64::max);
        let top = self.max.unwrap_or(largest).max(1e-9);
        let plot_w = WIDTH - NAMES - VALUES;
        for (c, name) in self.categories.iter().enumerate() {
            let y0 = 4.0 + per_row * c as f64;
            d.labels.push(Label {
                x: NAMES - 8.0,
                y: y0 + per_row / 2.0,
                anchor: "end",
                text: cut(name),
            });
            for s in 0..self.series.len() {
                let v = self.value(s, c);
                let y = y0 + BAR * s as f64;
                d.rects.push(Rect {
                    x: NAMES,
                    y,
                    w: (v / top * plot_w).max(if v > 0.0 { 1.0 } else { 0.0 }),
                    h: BAR - 2.0,
                    series: s,
                    tip: self.tip(s, c),
                });
                d.labels.push(Label {
                    x: WIDTH - VALUES + 6.0,
                    y: y + BAR - 4.0,
                    anchor: "start",
                    text: show(v, self.unit),
                });
            }
        }
        d.height = 8.0 + per_row * self.categories.len() as f64;
    }
}

/// The value axis: a round top at or above `largest` and the step of its grid lines.
fn axis(largest: f64) -> (f64, f64) {
    if largest <= 0.0 {
        return (1.0, 1.0);
    }
    let rough = largest / 4.0;
    let magnitude = 10f64.powf(rough.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * magnitude)
        .find(|s| *s >= rough)
        .unwrap_or(10.0 * magnitude);
    // Counts have whole steps.
    let step = if largest >= 1.0 { step.max(1.0) } else { step };
    ((largest / step).ceil() * step, step)
}

/// A value in words: whole numbers without decimals, `%` glued on.
pub fn show(v: f64, unit: &str) -> String {
    let n = if (v - v.round()).abs() < 1e-9 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    };
    match unit {
        "%" => format!("{n}%"),
        "" => n,
        unit => format!("{n} {unit}"),
    }
}

/// A name short enough for the chart's margin.
fn cut(name: &str) -> String {
    if name.chars().count() <= NAME_CHARS {
        name.to_string()
    } else {
        let mut s: String = name.chars().take(NAME_CHARS - 1).collect();
        s.push('…');
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chart(kind: Kind) -> Chart {
        Chart {
            id: "t",
            title: "t".into(),
            unit: "pods",
            kind,
            categories: vec!["start".into(), "1".into(), "2".into()],
            series: vec![
                Series {
                    name: "old".into(),
                    values: vec![3.0, 2.0, 0.0],
                },
                Series {
                    name: "new".into(),
                    values: vec![0.0, 1.0, 3.0],
                },
            ],
            max: None,
        }
    }

    #[test]
    fn stacked_columns_reach_their_sum() {
        let d = chart(Kind::Columns).draw();
        // start: one segment (old 3); step 1: old 2 and new 1; step 2: new 3.
        assert_eq!(d.rects.len(), 4);
        let tops: Vec<f64> = d.rects.iter().map(|r| r.y).collect();
        // All three columns sum to 3: their tops meet.
        assert!((tops[0] - tops[2]).abs() < 1e-9 && (tops[0] - tops[3]).abs() < 1e-9);
        assert_eq!(d.rects[2].tip, "1: new 1 pods");
        assert_eq!(d.legend.len(), 2);
    }

    #[test]
    fn lines_have_a_dot_per_category_and_bars_a_row_per_category() {
        let d = chart(Kind::Lines).draw();
        assert_eq!(d.lines.len(), 2);
        assert!(d.lines.iter().all(|l| l.dots.len() == 3));
        let d = chart(Kind::Bars).draw();
        assert_eq!(d.rects.len(), 6);
        // The longest bar is the largest value.
        let widest = d.rects.iter().map(|r| r.w).fold(0.0, f64::max);
        assert_eq!(widest, WIDTH - NAMES - VALUES);
    }

    #[test]
    fn axes_are_round() {
        assert_eq!(axis(7.0), (8.0, 2.0));
        assert_eq!(axis(100.0), (100.0, 25.0));
        assert_eq!(axis(0.0), (1.0, 1.0));
        assert_eq!(axis(3.0), (3.0, 1.0));
        assert_eq!(show(2.0, "%"), "2%");
        assert_eq!(show(2.26, ""), "2.3");
        assert_eq!(cut(&"x".repeat(40)).chars().count(), NAME_CHARS);
    }
}
