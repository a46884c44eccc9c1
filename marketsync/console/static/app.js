// The app's only script of its own: a "Copy" button copies the text of the element its data-copy names, a form
// with data-confirm asks before it does what cannot be undone, and a select with data-sites-of offers only the
// sites of the marketplace chosen in the select it names (without the script, every site shows, grouped by
// marketplace, and the server refuses a site the marketplace does not have).
// A file rather than onclick="...": the Content-Security-Policy allows no inline script.
document.addEventListener("click", (event) => {
  const button = event.target.closest("button[data-copy]");
  if (button) {
    navigator.clipboard.writeText(document.getElementById(button.dataset.copy).textContent);
  }
});

document.addEventListener("submit", (event) => {
  const question = event.target.dataset.confirm;
  if (question && !window.confirm(question)) {
    event.preventDefault();
  }
});

// Every marketplace's group of sites, kept aside once: the select then holds the chosen marketplace's group alone.
const siteGroups = new Map();

function offerSites(sites) {
  const platform = document.getElementById(sites.dataset.sitesOf).value;
  if (!siteGroups.has(sites)) {
    siteGroups.set(sites, Array.from(sites.querySelectorAll("optgroup"), (group) => group.cloneNode(true)));
  }
  const kept = sites.value;
  const group = siteGroups.get(sites).find((candidate) => candidate.dataset.platform === platform);
  sites.replaceChildren(...(group ? [group.cloneNode(true)] : []));
  if (Array.from(sites.options).some((option) => option.value === kept)) {
    sites.value = kept;
  }
}

document.addEventListener("DOMContentLoaded", () => {
  for (const sites of document.querySelectorAll("select[data-sites-of]")) {
    offerSites(sites);
    document.getElementById(sites.dataset.sitesOf).addEventListener("change", () => offerSites(sites));
  }
});
