// The app's only script of its own: a "Copy" button copies the text of the element its data-copy names, and a
// form with data-confirm asks before it does what cannot be undone.
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
