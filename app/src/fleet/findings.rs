//! `/fleet/findings`: the inventory checks' findings across the fleet.

use leptos::prelude::*;
use leptos_meta::Title;

use super::{use_fleet_query, Exports, FilterFields, FleetTabs, Pager};
use crate::components::{ErrorNote, Stat, TableHead};
use crate::fleet::dto::{FindingsPageDto, FleetQuery};
use crate::fleet::inventory::Chart;
use crate::fleet::sfn;
use crate::hydrated::{self, Hydrated};

#[component]
pub fn FleetFindings() -> impl IntoView {
    let (filter, offset) = use_fleet_query();
    let page = crate::hydrated::resource(
        move || (filter(), offset()),
        |(f, o)| hydrated::fetch(sfn::fleet_findings_page(f, Some(o))),
    );
    view! {
        <Title text="Findings · Fleet" />
        <h1>"Fleet: audit findings"</h1>
        <FleetTabs />
        {loaded!(page, "Loading findings…", |Hydrated(p)| view! { <FindingList page=p filter=filter() /> })}
    }
}

#[component]
fn FindingList(page: FindingsPageDto, filter: FleetQuery) -> impl IntoView {
    let FindingsPageDto {
        list,
        counts,
        chart,
    } = page;
    let per_severity =
        |sev: &str| -> u64 { counts.iter().filter(|c| c.0 == sev).map(|c| c.2).sum() };
    let mut checks: Vec<String> = counts.iter().map(|c| c.1.clone()).collect();
    checks.sort();
    checks.dedup();
    // Rows arrive most severe first: a heading row starts each severity's group.
    let mut groups: Vec<(String, Vec<_>)> = Vec::new();
    for row in list.rows {
        if groups.last().map(|g| g.0.as_str()) != Some(row.finding.severity.as_str()) {
            groups.push((row.finding.severity.clone(), Vec::new()));
        }
        if let Some(g) = groups.last_mut() {
            g.1.push(row);
        }
    }
    view! {
        <section class="stats" aria-label="Findings per severity" id="severity-counts">
            <Stat label="High" value=per_severity("high").to_string() />
            <Stat label="Medium" value=per_severity("medium").to_string() />
            <Stat label="Low" value=per_severity("low").to_string() />
        </section>
        <Chart svg=chart id="chart-findings" />
        <section class="card" aria-labelledby="findings-heading">
            <div class="card-head">
                <h2 id="findings-heading">{format!("{} finding(s)", list.total)}</h2>
                <Exports what="findings" filter=filter.clone() />
            </div>
            <form method="get" action="/fleet/findings" class="filter wrap" id="findings-filter">
                <FilterFields filter=filter.clone() tenants=list.tenants.clone() q_label="Text contains" />
                <label for="f-severity">"Severity"</label>
                <select id="f-severity" name="severity">
                    <option value="">"All"</option>
                    {["high", "medium", "low"].into_iter().map(|s| {
                        let selected = filter.severity == s;
                        view! { <option value=s selected=selected>{s}</option> }
                    }).collect_view()}
                </select>
                <label for="f-check">"Check"</label>
                <select id="f-check" name="check">
                    <option value="">"All"</option>
                    {checks.into_iter().map(|c| {
                        let selected = filter.check == c;
                        view! { <option value=c.clone() selected=selected>{c.clone()}</option> }
                    }).collect_view()}
                </select>
                <button type="submit">"Filter"</button>
            </form>
            {if groups.is_empty() {
                view! { <p class="empty">"No findings."</p> }.into_any()
            } else {
                view! {
                    <table class="table" id="findings">
                        <TableHead cols=vec!["Cluster", "Tenant", "Check", "Subject", "Finding"] />
                        {groups.into_iter().map(|(severity, rows)| view! {
                            <tbody data-severity=severity.clone()>
                                <tr class="group"><th scope="colgroup" colspan="5">
                                    <span class=format!("badge badge-sev-{severity}")>{severity.clone()}</span>
                                </th></tr>
                                {rows.into_iter().map(|r| view! {
                                    <tr>
                                        <td><a href=format!("/clusters/{}", r.cluster_id)>{r.cluster}</a></td>
                                        <td>{r.tenant}</td>
                                        <td><code>{r.finding.check}</code></td>
                                        <td>{r.finding.subject}</td>
                                        <td>{r.finding.message}</td>
                                    </tr>
                                }).collect_view()}
                            </tbody>
                        }).collect_view()}
                    </table>
                }.into_any()
            }}
            <Pager path="/fleet/findings" query=filter.to_query() offset=list.offset limit=list.limit total=list.total />
        </section>
    }
}
