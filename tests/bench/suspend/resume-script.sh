# Sourced by state.sh and native.sh: the CLI path's one-request resume.
# resume_script TABS_JSONL prints a `run-code` function that opens every
# tab of TABS_JSONL (one {url, forms, scrollY} per line) at once and puts
# its form values and scroll back.
resume_script() {
  printf 'async page => {\n  const tabs = ['
  paste -sd, "$1"
  printf '];\n'
  cat <<'JS'
  const ctx = page.context();
  const pages = [page];
  for (let i = 1; i < tabs.length; i++) pages.push(await ctx.newPage());
  await Promise.all(tabs.map(async (t, i) => {
    await pages[i].goto(t.url);
    await pages[i].evaluate(s => { for (const [id, v] of s.forms) { const e = document.getElementById(id); if (e) e.value = v } scrollTo(0, s.scrollY) }, t);
  }));
  return pages.length;
}
JS
}
