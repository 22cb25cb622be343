from django.contrib.auth.decorators import login_required
from django.db import connection
from django.shortcuts import render


@login_required
def floor(request):
    """The benchmark's floor: a signed-in page that runs one query of its own, so every page's
    time reads as a multiple of what any request costs."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()
    return render(request, "bench/floor.html")
