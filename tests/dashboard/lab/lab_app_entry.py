from dashboard.lab.page import render_lab

render_lab()
