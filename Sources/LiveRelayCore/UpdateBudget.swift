/// The update budget's defaults: priority-10 pushes an activity may get an hour before its updates go at priority 5
/// (`LIVERELAY_PRIORITY10_PER_HOUR`, doubled with `frequent_updates`: one every 30 s, or 15 s, about what Apple's
/// engineers say the budget allows), and how many in the last hour show it as `warning`. The relay publishes both
/// into `relay_setting` when it starts, for the views (sql/030_views.sql, which falls back to these numbers on a
/// database no relay has started on yet).
public enum UpdateBudget {
    public static let defaultPerHour = 120
    public static let warningAt = 30
}
