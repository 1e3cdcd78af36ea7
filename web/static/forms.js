// Filter forms: a <select data-autosubmit> submits its form as soon as it changes. A listener here
// rather than an inline onchange="..." attribute: the Content-Security-Policy runs no inline code.
"use strict";

document.addEventListener("change", (event) => {
  const target = event.target;
  if (target instanceof HTMLSelectElement && target.hasAttribute("data-autosubmit") && target.form) {
    target.form.submit();
  }
});
