// MathJax 3 for the math of the docstrings (pymdownx.arithmatex, generic mode: \( \) and
// \[ \]) and of the tutorials' markdown cells ($ and $$).
window.MathJax = {
  tex: {
    inlineMath: [["\\(", "\\)"], ["$", "$"]],
    displayMath: [["\\[", "\\]"], ["$$", "$$"]],
    processEscapes: true,
    processEnvironments: true,
  },
};
